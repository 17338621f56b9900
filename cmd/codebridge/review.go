package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/review"
	"github.com/codebridge-mcp/codebridge/bridge/scan"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// errQuarantined is what [reviewTools] returns, wrapped, when it showed a
// quarantined tool.
var errQuarantined = errors.New("quarantined tools")

// quarantinedTools starts the servers named (every enabled one when names
// is empty) through a listing pool, as servers --tools does, and returns
// each one's quarantined tools by server name, in the order listed.
func quarantinedTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, names []string) (map[string][]review.Held, *manifest.Store, error) {
	conf := l.Config()
	var servers []*discovery.Server
	for _, srv := range conf.Servers {
		if !srv.Disabled && (len(names) == 0 || slices.Contains(names, srv.Name)) {
			servers = append(servers, srv)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(servers, func(s *discovery.Server) bool { return s.Name == n }) {
			return nil, nil, fmt.Errorf("no enabled MCP server %q in %s ('codebridge servers' lists them)", n, cfg.ConfigDir)
		}
	}
	p := l.Pool()
	p.Update(servers)
	tctx, cancel := context.WithTimeout(ctx, bridge.ListTimeout)
	defer cancel()
	listed := make([]string, len(servers))
	for i, srv := range servers {
		listed[i] = srv.Name
	}
	held, err := review.Quarantined(tctx, p, l.Manifests(), listed, cfg.QuarantineNew)
	return held, l.Manifests(), err
}

// reviewTools prints what changed in each quarantined tool of server (of
// every enabled server when server is ""), as `codebridge tools review`
// does: a line diff of its pinned and current definitions. It returns an
// error matching [errQuarantined] when it showed one and every server
// listed its tools; otherwise the listing's error.
func reviewTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, server string, out io.Writer) error {
	var names []string
	if server != "" {
		names = []string{server}
	}
	held, _, err := quarantinedTools(ctx, cfg, l, names)
	n := 0
	for _, srv := range slices.Sorted(maps.Keys(held)) {
		repeats := review.Repeated(held[srv])
		instructions := len(held[srv]) > 0 && review.Instructions(held[srv][0].Flag)
		if instructions && len(repeats) == 0 {
			fmt.Fprintf(out, "%s: its instructions read as tool poisoning, so all %d of its tools are held until approved:\n",
				termtext.Line(srv), len(held[srv]))
			printFindings(out, held[srv][0].Flag)
			fmt.Fprintf(out, "approve them with: codebridge tools approve %s\n\n", shellWord(srv))
		}
		if len(repeats) > 0 {
			n += len(held[srv])
			fmt.Fprintf(out, "%s: lists %s more than once, so which definition code would get is the server's choice: "+
				"all %d of its tools are held until it lists each name once (they cannot be approved; fix or remove the server)\n",
				termtext.Line(srv), termtext.Line(strings.Join(repeats, ", ")), len(held[srv]))
		}
		for _, h := range held[srv] {
			if len(repeats) > 0 && !slices.Contains(repeats, h.Now.Name) {
				continue // held with its listing, unchanged itself
			}
			if len(repeats) == 0 {
				n++
			}
			// The server wrote the tool's name and definition: escaped, so
			// neither can send the terminal commands or fake a line.
			name := termtext.Line(srv) + "." + termtext.Line(h.Now.Name)
			switch {
			case h.State == manifest.Repeated && h.Pinned:
				fmt.Fprintf(out, "%s: one of its listed definitions, against the one pinned on %s\n", name,
					h.Pin.Pinned.Local().Format("2006-01-02 15:04:05"))
			case h.State == manifest.Repeated:
				fmt.Fprintf(out, "%s: one of its listed definitions (never pinned)\n", name)
			case h.State == manifest.Flagged && instructions && h.Pinned && manifest.Hash(h.Pin.Tool) == manifest.Hash(h.Now):
				fmt.Fprintf(out, "%s: held with its server's instructions (unchanged since pinned)\n\n", name)
				continue
			case h.State == manifest.Flagged && instructions && !h.Pinned:
				fmt.Fprintf(out, "%s: new, held with its server's instructions\n", name)
			case h.State == manifest.Flagged && !instructions:
				how := "new"
				if h.Pinned {
					how = fmt.Sprintf("changed since it was pinned on %s (%s)", h.Pin.Pinned.Local().Format("2006-01-02 15:04:05"),
						strings.Join(manifest.Differences(h.Pin.Tool, h.Now), ", "))
				}
				fmt.Fprintf(out, "%s: %s, and held by the tool-poisoning scanner, which found:\n", name, how)
				printFindings(out, h.Flag)
			case h.Pinned:
				fmt.Fprintf(out, "%s: changed since it was pinned on %s (%s)\n", name,
					h.Pin.Pinned.Local().Format("2006-01-02 15:04:05"), strings.Join(manifest.Differences(h.Pin.Tool, h.Now), ", "))
			default:
				fmt.Fprintf(out, "%s: new, held until approved (MCP_BRIDGE_QUARANTINE_NEW=1)\n", name)
			}
			if !h.Denied.IsZero() {
				fmt.Fprintf(out, "denied on %s: it stays quarantined\n", h.Denied.Local().Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintln(out, "--- pinned\n+++ now")
			for _, line := range h.Diff() {
				fmt.Fprintln(out, termtext.Line(line))
			}
			if h.State != manifest.Repeated {
				fmt.Fprintf(out, "approve it with: codebridge tools approve %s %s\n", shellWord(srv), shellWord(h.Now.Name))
			}
			fmt.Fprintln(out)
		}
	}
	if n == 0 && err == nil {
		what := "the enabled servers"
		if server != "" {
			what = server
		}
		fmt.Fprintf(out, "no quarantined tools: every tool of %s matches its pinned definition\n", what)
	}
	if n > 0 && err == nil {
		err = fmt.Errorf("%w: %d shown above", errQuarantined, n)
	}
	return err
}

// approveTools pins the current definitions of server's tools named, or
// of all its quarantined tools when none is named, as `codebridge tools
// approve` does, and audits each approval.
func approveTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, server string, tools []string, out io.Writer) error {
	return decideTools(ctx, cfg, l, server, tools, out, review.Approve, "approve", "approved")
}

// denyTools records that the current definitions of server's tools named
// (all its quarantined ones when none is named) are refused, as
// `codebridge tools deny` does: they stay quarantined.
func denyTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, server string, tools []string, out io.Writer) error {
	return decideTools(ctx, cfg, l, server, tools, out, review.Deny, "deny", "denied")
}

// decideTools lists server's quarantined tools and applies decide to
// those named, saying what it did.
func decideTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, server string, tools []string, out io.Writer,
	decide func(*manifest.Store, *audit.Log, string, []review.Held, []string) ([]*mcp.Tool, error), verb, past string) error {
	held, store, err := quarantinedTools(ctx, cfg, l, []string{server})
	if err != nil {
		return err
	}
	decided, err := decide(store, l.Audit(), server, held[server], tools)
	switch {
	case errors.Is(err, manifest.ErrRepeated):
		return fmt.Errorf("%w ('codebridge tools review %s' shows the definitions)", err, shellWord(server))
	case errors.Is(err, review.ErrNotHeld):
		return fmt.Errorf("%w ('codebridge tools review %s' shows its quarantined tools)", err, shellWord(server))
	case err != nil:
		return err
	case len(decided) == 0:
		fmt.Fprintf(out, "no quarantined tools of %s: nothing to %s\n", termtext.Line(server), verb)
		return nil
	}
	for _, t := range decided {
		fmt.Fprintf(out, "%s %s.%s\n", past, termtext.Line(server), termtext.Line(t.Name))
	}
	if verb == "deny" {
		fmt.Fprintln(out, "they stay quarantined; 'codebridge tools approve' still accepts them")
	}
	return nil
}

// printFindings lists what the scanner found, one finding a line: its
// code, where, what the code means, and the excerpt (Go-quoted by the
// scanner, escaped again for the terminal).
func printFindings(out io.Writer, f manifest.Flag) {
	for _, x := range f.Findings {
		fmt.Fprintf(out, "  %s in %s: %s\n    %s\n", x.Code, termtext.Line(x.Field), scan.Codes[x.Code], termtext.Line(x.Excerpt))
	}
}

// shellWord is s as one word of a POSIX shell command line to copy: as it
// is when it holds only characters no shell treats specially, otherwise in
// single quotes, what does not print escaped ([termtext.Line]) so the
// terminal shows it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/@+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(termtext.Line(s), "'", `'\''`) + "'"
}
