package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/scan"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// errQuarantined is what [reviewTools] returns, wrapped, when it showed a
// quarantined tool.
var errQuarantined = errors.New("quarantined tools")

// heldTool is a quarantined tool: its current definition and its pin, if
// it has one (none for a tool held as new).
type heldTool struct {
	now    *mcp.Tool
	pin    manifest.Pin
	pinned bool
	state  manifest.State
	flag   manifest.Flag // for Flagged, what the scanner found
}

// quarantinedTools starts the servers named (every enabled one when names
// is empty) through a listing pool, as servers --tools does, and returns
// each one's quarantined tools by server name, in the order listed.
func quarantinedTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, names []string) (map[string][]heldTool, *manifest.Store, error) {
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
	store := l.Manifests()
	tctx, cancel := context.WithTimeout(ctx, bridge.ListTimeout)
	defer cancel()
	out := map[string][]heldTool{}
	var errs []error
	for _, srv := range servers {
		tools, err := p.Tools(tctx, srv.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the tools of %s: %w", srv.Name, err))
			continue
		}
		pins, _, err := store.LoadPins(srv.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states := pins.States(tools)
		for i, t := range tools {
			pin, pinned := pins.Lookup(t.Name)
			if states[i].Held(cfg.QuarantineNew) {
				flag, _ := pins.Flag(t)
				out[srv.Name] = append(out[srv.Name], heldTool{now: t, pin: pin, pinned: pinned, state: states[i], flag: flag})
			}
		}
	}
	return out, store, errors.Join(errs...)
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
		repeats := repeatedNames(held[srv])
		instructions := len(held[srv]) > 0 && isInstructions(held[srv][0].flag)
		if instructions && len(repeats) == 0 {
			fmt.Fprintf(out, "%s: its instructions read as tool poisoning, so all %d of its tools are held until approved:\n",
				termtext.Line(srv), len(held[srv]))
			printFindings(out, held[srv][0].flag)
			fmt.Fprintf(out, "approve them with: codebridge tools approve %s\n\n", shellWord(srv))
		}
		if len(repeats) > 0 {
			n += len(held[srv])
			fmt.Fprintf(out, "%s: lists %s more than once, so which definition code would get is the server's choice: "+
				"all %d of its tools are held until it lists each name once (they cannot be approved; fix or remove the server)\n",
				termtext.Line(srv), termtext.Line(strings.Join(repeats, ", ")), len(held[srv]))
		}
		for _, h := range held[srv] {
			if len(repeats) > 0 && !slices.Contains(repeats, h.now.Name) {
				continue // held with its listing, unchanged itself
			}
			if len(repeats) == 0 {
				n++
			}
			// The server wrote the tool's name and definition: escaped, so
			// neither can send the terminal commands or fake a line.
			name := termtext.Line(srv) + "." + termtext.Line(h.now.Name)
			var was []string
			switch {
			case h.state == manifest.Repeated && h.pinned:
				fmt.Fprintf(out, "%s: one of its listed definitions, against the one pinned on %s\n", name,
					h.pin.Pinned.Local().Format("2006-01-02 15:04:05"))
				was = definitionLines(h.pin.Tool)
			case h.state == manifest.Repeated:
				fmt.Fprintf(out, "%s: one of its listed definitions (never pinned)\n", name)
			case h.state == manifest.Flagged && instructions && h.pinned && manifest.Hash(h.pin.Tool) == manifest.Hash(h.now):
				fmt.Fprintf(out, "%s: held with its server's instructions (unchanged since pinned)\n\n", name)
				continue
			case h.state == manifest.Flagged && instructions && !h.pinned:
				fmt.Fprintf(out, "%s: new, held with its server's instructions\n", name)
			case h.state == manifest.Flagged && !instructions:
				how := "new"
				if h.pinned {
					how = fmt.Sprintf("changed since it was pinned on %s (%s)", h.pin.Pinned.Local().Format("2006-01-02 15:04:05"),
						strings.Join(manifest.Differences(h.pin.Tool, h.now), ", "))
					was = definitionLines(h.pin.Tool)
				}
				fmt.Fprintf(out, "%s: %s, and held by the tool-poisoning scanner, which found:\n", name, how)
				printFindings(out, h.flag)
			case h.pinned:
				fmt.Fprintf(out, "%s: changed since it was pinned on %s (%s)\n", name,
					h.pin.Pinned.Local().Format("2006-01-02 15:04:05"), strings.Join(manifest.Differences(h.pin.Tool, h.now), ", "))
				was = definitionLines(h.pin.Tool)
			default:
				fmt.Fprintf(out, "%s: new, held until approved (MCP_BRIDGE_QUARANTINE_NEW=1)\n", name)
			}
			fmt.Fprintln(out, "--- pinned\n+++ now")
			for _, line := range lineDiff(was, definitionLines(h.now)) {
				fmt.Fprintln(out, termtext.Line(line))
			}
			if h.state != manifest.Repeated {
				fmt.Fprintf(out, "approve it with: codebridge tools approve %s %s\n", shellWord(srv), shellWord(h.now.Name))
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

// approveTools pins the current definitions of server's tools named, or of
// all its quarantined tools when none is named, as `codebridge tools
// approve` does, and audits each approval.
func approveTools(ctx context.Context, cfg settings.Config, l *bridge.Listing, server string, tools []string, out io.Writer) error {
	held, store, err := quarantinedTools(ctx, cfg, l, []string{server})
	if err != nil {
		return err
	}
	if repeats := repeatedNames(held[server]); len(repeats) > 0 {
		return fmt.Errorf("%w: %s lists %s more than once, and which definition code would get is the server's choice: nothing approved; fix or remove the server ('codebridge tools review %s' shows the definitions)",
			manifest.ErrRepeated, termtext.Line(server), termtext.Line(strings.Join(repeats, ", ")), shellWord(server))
	}
	var approve []*mcp.Tool
	var names []string
	for _, h := range held[server] {
		if len(tools) == 0 || slices.Contains(tools, h.now.Name) {
			approve = append(approve, h.now)
			names = append(names, h.now.Name)
		}
	}
	for _, t := range tools {
		if !slices.Contains(names, t) {
			return fmt.Errorf("%s has no quarantined tool %q: nothing approved ('codebridge tools review %s' shows its quarantined tools)", server, t, server)
		}
	}
	if len(approve) == 0 {
		fmt.Fprintf(out, "no quarantined tools of %s: nothing to approve\n", server)
		return nil
	}
	if err := store.Approve(server, approve); err != nil {
		return err
	}
	log := l.Audit()
	for _, t := range approve {
		if log != nil {
			log.Record(audit.Record{Kind: audit.KindPin, Time: time.Now(), Server: server, Tool: t.Name, Outcome: audit.OutcomeApproved})
		}
		fmt.Fprintf(out, "approved %s.%s\n", termtext.Line(server), termtext.Line(t.Name))
	}
	return nil
}

// isInstructions reports whether f holds a server's instructions rather
// than one tool's definition.
func isInstructions(f manifest.Flag) bool {
	return len(f.Findings) > 0 && f.Findings[0].Field == "instructions"
}

// printFindings lists what the scanner found, one finding a line: its
// code, where, what the code means, and the excerpt (Go-quoted by the
// scanner, escaped again for the terminal).
func printFindings(out io.Writer, f manifest.Flag) {
	for _, x := range f.Findings {
		fmt.Fprintf(out, "  %s in %s: %s\n    %s\n", x.Code, termtext.Line(x.Field), scan.Codes[x.Code], termtext.Line(x.Excerpt))
	}
}

// repeatedNames are the tool names a server's held tools repeat, sorted.
func repeatedNames(held []heldTool) []string {
	tools := make([]*mcp.Tool, len(held))
	for i, h := range held {
		tools[i] = h.now
	}
	return manifest.Repeats(tools)
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

// definitionLines is t's pinned definition as lines to compare: its
// description as it reads, then its schemas and annotations as pretty JSON
// with sorted keys.
func definitionLines(t *mcp.Tool) []string {
	d := manifest.DefinitionOf(t)
	lines := []string{"description:"}
	for line := range strings.Lines(d.Description) {
		lines = append(lines, "  "+strings.TrimRight(line, "\r\n"))
	}
	for _, part := range []struct {
		name string
		v    any
	}{{"inputSchema", d.InputSchema}, {"outputSchema", d.OutputSchema}, {"annotations", d.Annotations}} {
		raw, err := manifest.Canonical(part.v)
		if err != nil || string(raw) == "null" {
			continue
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, raw, "  ", "  ")
		lines = append(lines, part.name+":")
		for line := range strings.Lines("  " + pretty.String()) {
			lines = append(lines, strings.TrimRight(line, "\n"))
		}
	}
	return lines
}

// diffContext is how many unchanged lines lineDiff keeps around a change.
const diffContext = 3

// lineDiff is a line diff of a and b by longest common subsequence: each
// line prefixed "  " (in both), "- " (only in a) or "+ " (only in b), and
// runs of unchanged lines further than diffContext from a change cut to
// "  ...". Inputs too large for the table compare as all removed, then all
// added.
func lineDiff(a, b []string) []string {
	var full []string
	if len(a)*len(b) > 1<<22 {
		for _, l := range a {
			full = append(full, "- "+l)
		}
		for _, l := range b {
			full = append(full, "+ "+l)
		}
	} else {
		// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
		lcs := make([][]int, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(a) || j < len(b) {
			switch {
			case i < len(a) && j < len(b) && a[i] == b[j]:
				full = append(full, "  "+a[i])
				i, j = i+1, j+1
			case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
				full = append(full, "- "+a[i])
				i++
			default:
				full = append(full, "+ "+b[j])
				j++
			}
		}
	}
	// Keep the lines within diffContext of a change.
	keep := make([]bool, len(full))
	for k, l := range full {
		if !strings.HasPrefix(l, "  ") {
			for c := max(0, k-diffContext); c <= min(len(full)-1, k+diffContext); c++ {
				keep[c] = true
			}
		}
	}
	var out []string
	for k, l := range full {
		switch {
		case keep[k]:
			out = append(out, l)
		case len(out) == 0 || out[len(out)-1] != "  ...":
			out = append(out, "  ...")
		}
	}
	return out
}
