package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// lanes are codebridge's lanes (docs/lanes.md), in the order reported.
var lanes = []string{settings.LaneCode, settings.LaneTools, settings.LaneSearch}

// listing is what one way lists to a client at its start: the servers'
// own tools/list (direct), or a lane's.
type listing struct {
	way    string
	tools  int
	bytes  int
	tokens tokens
}

// directListing is the servers' own listings, as n listed them; serverTok
// has their tokens.
func directListing(n *native, serverTok map[string]tokens) listing {
	l := listing{way: "direct"}
	for _, s := range servers {
		l.tools += n.counts[s.name]
		l.bytes += len(n.tools[s.name])
		l.tokens = l.tokens.add(serverTok[s.name])
	}
	return l
}

// laneListings starts a codebridge per lane with the servers configured
// for w, each with its folders under root, and lists its tools: one
// listing per lane, tokens counted offline.
func laneListings(ctx context.Context, cfg config, root string, w *workspace) ([]listing, error) {
	var out []listing
	var texts []string
	for _, lane := range lanes {
		cs, stderr, err := startCodebridge(ctx, cfg, filepath.Join(root, lane), w, settings.EnvPrefix+"LANE="+lane)
		if err != nil {
			return nil, err
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		res, err := cs.ListTools(lctx, nil)
		cancel()
		cs.Close()
		if err != nil {
			return nil, fmt.Errorf("tools/list of the %s lane: %w\n%s", lane, err, stderr.String())
		}
		text := mustJSON(res.Tools)
		texts = append(texts, text)
		out = append(out, listing{way: lane + " lane", tools: len(res.Tools), bytes: len(text)})
	}
	counts, err := tokenizer{clients: filepath.Join(cfg.npm, "clients")}.count(texts)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].tokens = counts[i]
	}
	return out, nil
}

// listingsText is the table of what each way lists.
func listingsText(ls []listing) string {
	var b bytes.Buffer
	fmt.Fprintln(&b, "What a client's context holds from the start, each way's tools/list (compact JSON of the tools):")
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "way\ttools\tbytes\tcl100k\to200k\t")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", l.way, l.tools, l.bytes, l.tokens[0], l.tokens[1])
	}
	tw.Flush()
	return b.String()
}

// runLanes measures only what each lane lists, beside the servers' own
// listings, with the servers of the benchmark whose npm trees are
// installed, and prints the table.
func runLanes(ctx context.Context, cfg config) error {
	servers = slices.DeleteFunc(servers, func(s downstream) bool {
		_, err := os.Stat(filepath.Join(cfg.npm, s.tree, "node_modules", ".bin", s.bin))
		return err != nil
	})
	root, err := benchRoot()
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	w, err := newWorkspace(filepath.Join(root, "w"))
	if err != nil {
		return err
	}
	n, err := connectNative(ctx, cfg.npm, w)
	if err != nil {
		return err
	}
	n.close()
	var texts []string
	names := make([]string, len(servers))
	for i, s := range servers {
		texts = append(texts, string(n.tools[s.name]))
		names[i] = s.name
	}
	counts, err := tokenizer{clients: filepath.Join(cfg.npm, "clients")}.count(texts)
	if err != nil {
		return err
	}
	serverTok := map[string]tokens{}
	for i, s := range servers {
		serverTok[s.name] = counts[i]
	}
	ls, err := laneListings(ctx, cfg, root, w)
	if err != nil {
		return err
	}
	fmt.Printf("Servers: %v.\n", names)
	fmt.Print(listingsText(append([]listing{directListing(n, serverTok)}, ls...)))
	return nil
}
