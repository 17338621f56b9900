package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge"
	bridgehost "github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/policy"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/bridge/typed"
)

// withListing builds the listing of cfg's servers, runs f on it, and then
// stops the servers it started within shutdownBudget, even when ctx has
// ended.
func (c *call) withListing(ctx context.Context, f func(*bridge.Listing) error) error {
	l := bridge.NewListing(c.cfg, c.logger)
	err := f(l)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownBudget)
	defer cancel()
	if cerr := l.Close(sctx); cerr != nil {
		c.logger.Warn("stopping MCP servers", "err", cerr)
	}
	return err
}

// listOptions configure [listServers].
type listOptions struct {
	logger *slog.Logger
	tools  bool // start every server and list its tools
	out    io.Writer
}

// errProblems is what [listServers] and doctor return, wrapped, when they
// listed problems: a configuration file it could not use, or a server that
// failed to start.
var errProblems = errors.New("problems listed")

// listServers prints the configured servers, as `codebridge servers` does: name,
// transport, state and source file, then any configuration problems. With
// opts.tools it starts each server (in parallel) and lists its tools. When it
// printed a problem, it returns an error matching [errProblems] that counts
// them.
func listServers(ctx context.Context, cfg settings.Config, l *bridge.Listing, opts listOptions) error {
	conf, p := l.Config(), l.Pool()
	p.Update(conf.Servers)

	var tools map[string][]*mcp.Tool
	if opts.tools {
		tctx, cancel := context.WithTimeout(ctx, bridge.ListTimeout)
		tools, _ = p.AllTools(tctx, bridgehost.SearchParallelism)
		cancel()
	}
	status := p.Status()
	// Server names and sources come from config files (perhaps imported from
	// a project), tools and errors from the servers: every one escaped, so
	// none can forge a line or send the terminal commands.
	cell := termtext.Line
	if len(conf.Servers) == 0 {
		fmt.Fprintf(opts.out, "no servers configured in %s: add a JSON file with an \"mcpServers\" object there\n", cfg.ConfigDir)
	} else {
		w := tabwriter.NewWriter(opts.out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(w, "SERVER\tTRANSPORT\tSTATE\tSOURCE\n")
		for _, st := range status {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cell(st.Name), st.Transport, st.State, cell(st.Source))
		}
		w.Flush()
	}
	if states := l.SignIns(); len(states) > 0 {
		fmt.Fprintf(opts.out, "\nsign-in (OAuth; codebridge login NAME, codebridge logout NAME):\n")
		w := tabwriter.NewWriter(opts.out, 0, 4, 2, ' ', 0)
		for _, st := range status {
			if state, ok := states[st.Name]; ok {
				fmt.Fprintf(w, "  %s\t%s\n", cell(st.Name), cell(state))
			}
		}
		w.Flush()
	}
	for _, st := range status {
		if st.Err != "" {
			fmt.Fprintf(opts.out, "\n%s failed:\n  %s\n", cell(st.Name), strings.ReplaceAll(termtext.Lines(strings.TrimSpace(st.Err)), "\n", "\n  "))
		}
	}
	fmt.Fprintf(opts.out, "\nsandbox engine: %s\n", bridge.EngineChoice(cfg))
	if opts.tools {
		policies := map[string]*policy.Policy{}
		states := map[string][]manifest.State{}
		store := l.Manifests()
		for _, srv := range conf.Servers {
			policies[srv.Name] = policy.New(cfg.Tools, srv)
			pins, _, _ := store.LoadPins(srv.Name)
			states[srv.Name] = pins.States(tools[srv.Name])
		}
		for _, st := range status {
			if len(tools[st.Name]) == 0 {
				continue
			}
			fmt.Fprintf(opts.out, "\n%s:\n", cell(st.Name))
			for i, t := range tools[st.Name] {
				mark := ""
				switch p := policies[st.Name]; {
				case p.Blocked(st.Name, t) != "":
					mark = "[blocked by policy] "
				case p.Confirm(t) != "":
					mark = "[asks first] "
				}
				if states[st.Name][i].Held(cfg.QuarantineNew) {
					mark += "[quarantined: codebridge tools review " + shellWord(st.Name) + "] "
				}
				fmt.Fprintf(opts.out, "  %-32s %s%s\n", cell(t.Name), mark, cell(typed.FirstLine(t.Description)))
			}
		}
	}
	if opts.tools && len(conf.Problems) == 0 {
		// Only when every file loaded: a server in a broken file keeps its
		// manifest until the file is fixed.
		removed, err := l.Manifests().Prune(conf.Servers)
		if err != nil {
			opts.logger.Warn("removing the saved tool lists of servers no longer configured", "err", err)
		}
		if len(removed) > 0 {
			sort.Strings(removed)
			fmt.Fprintf(opts.out, "\nremoved the saved tool lists of servers no longer configured: %s\n", cell(strings.Join(removed, ", ")))
		}
	}
	if len(conf.Problems) > 0 {
		fmt.Fprintf(opts.out, "\nproblems in %s:\n", cfg.ConfigDir)
		for _, prob := range conf.Problems {
			fmt.Fprintf(opts.out, "  %s\n", cell(settings.ExplainProblem(prob).String()))
		}
	}
	var found []string
	if n := len(conf.Problems); n > 0 {
		found = append(found, fmt.Sprintf("%s in the files of %s", plural(n, "problem"), cfg.ConfigDir))
	}
	failed := 0
	for _, st := range status {
		if st.Err != "" {
			failed++
		}
	}
	if failed > 0 {
		found = append(found, fmt.Sprintf("%s failed to start", plural(failed, "server")))
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %s; fix what is listed above and run it again", errProblems, strings.Join(found, ", "))
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// doctor runs doctor's checks ([bridge.Listing.Doctor]) and prints one line
// per finding, with the fix for each problem. It returns an error matching
// [errProblems] when a check failed.
func doctor(ctx context.Context, l *bridge.Listing, out io.Writer) error {
	failed := 0
	l.Doctor(ctx, func(f bridge.Finding) {
		if f.Level == bridge.FindFail {
			failed++
		}
		fmt.Fprintf(out, "%-4s  %-18s %s\n", f.Level, f.Check, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(out, "      %-18s fix: %s\n", "", f.Fix)
		}
	})
	if failed > 0 {
		return fmt.Errorf("%w: %s found; fix what is listed above and run codebridge doctor again", errProblems, plural(failed, "problem"))
	}
	fmt.Fprintln(out, "\nno problem found: agents can use codebridge.")
	return nil
}
