package main

import (
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

// runLanes measures what each lane's tools/list puts into a client's
// context at its start, beside the servers' own listings (direct), with
// the servers of the benchmark whose npm trees are installed; it prints one
// row per way.
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
	texts := []string{}
	tools := 0
	for _, s := range servers {
		texts = append(texts, string(n.tools[s.name]))
		tools += n.counts[s.name]
	}
	listed := map[string]int{}
	for _, lane := range lanes {
		cs, stderr, err := startCodebridge(ctx, cfg, filepath.Join(root, lane), w, settings.EnvPrefix+"LANE="+lane)
		if err != nil {
			return err
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		res, err := cs.ListTools(lctx, nil)
		cancel()
		cs.Close()
		if err != nil {
			return fmt.Errorf("tools/list of the %s lane: %w\n%s", lane, err, stderr.String())
		}
		texts = append(texts, mustJSON(res.Tools))
		listed[lane] = len(res.Tools)
	}
	counts, err := tokenizer{clients: filepath.Join(cfg.npm, "clients")}.count(texts)
	if err != nil {
		return err
	}
	var direct tokens
	bytes := 0
	for i := range servers {
		direct = direct.add(counts[i])
		bytes += len(texts[i])
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	fmt.Printf("Servers: %v, %d tools. What each way's tools/list puts into a client's context (compact JSON of the tools):\n\n", names, tools)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "way\ttools\tbytes\tcl100k\to200k\t")
	fmt.Fprintf(tw, "direct\t%d\t%d\t%d\t%d\t\n", tools, bytes, direct[0], direct[1])
	for i, lane := range lanes {
		k := len(servers) + i
		fmt.Fprintf(tw, "%s lane\t%d\t%d\t%d\t%d\t\n", lane, listed[lane], len(texts[k]), counts[k][0], counts[k][1])
	}
	return tw.Flush()
}
