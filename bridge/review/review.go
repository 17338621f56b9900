// Package review finds the tools held against their pins (bridge/manifest)
// and approves them: what `codebridge tools review` and `tools approve`
// print and do, and what the dashboard shows and does, from one piece of
// code.
package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
)

// Lister lists a server's tools, starting it if needed (bridge/pool's
// Pool).
type Lister interface {
	Tools(ctx context.Context, server string) ([]*mcp.Tool, error)
}

// Held is a quarantined tool: its current definition and its pin, if it
// has one (none for a tool held as new).
type Held struct {
	Server string
	Now    *mcp.Tool
	Pin    manifest.Pin
	Pinned bool
	State  manifest.State
	Flag   manifest.Flag // for Flagged, what the scanner found
	Denied time.Time     // when a person denied this definition; zero if none did
}

// Quarantined lists the tools of each server named through l and returns
// those held against their pins in store, by server name, in the order
// listed. A server that fails to list is left out and its error joined
// into the error returned.
func Quarantined(ctx context.Context, l Lister, store *manifest.Store, servers []string, quarantineNew bool) (map[string][]Held, error) {
	out := map[string][]Held{}
	var errs []error
	for _, name := range servers {
		tools, err := l.Tools(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the tools of %s: %w", name, err))
			continue
		}
		pins, _, err := store.LoadPins(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states := pins.States(tools)
		for i, t := range tools {
			pin, pinned := pins.Lookup(t.Name)
			if states[i].Held(quarantineNew) {
				flag, _ := pins.Flag(t)
				denied, _ := pins.Denial(t)
				out[name] = append(out[name], Held{Server: name, Now: t, Pin: pin, Pinned: pinned, State: states[i], Flag: flag, Denied: denied})
			}
		}
	}
	return out, errors.Join(errs...)
}

// Diff is a line diff ([LineDiff]) of h's pinned definition, none when it
// has no pin, and its current one.
func (h Held) Diff() []string {
	var was []string
	if h.Pinned {
		was = DefinitionLines(h.Pin.Tool)
	}
	return LineDiff(was, DefinitionLines(h.Now))
}

// Instructions reports whether f holds a server's instructions rather
// than one tool's definition.
func Instructions(f manifest.Flag) bool {
	return len(f.Findings) > 0 && f.Findings[0].Field == "instructions"
}

// Repeated are the tool names a server's held tools repeat, sorted.
func Repeated(held []Held) []string {
	tools := make([]*mcp.Tool, len(held))
	for i, h := range held {
		tools[i] = h.Now
	}
	return manifest.Repeats(tools)
}

// ErrNotHeld is what [Approve] returns, wrapped, for a tool named that
// is not held.
var ErrNotHeld = errors.New("no quarantined tool")

// Approve pins the current definitions of the tools of server named in
// tools, or of all its held tools when none is named, and audits each
// approval in log (nil: none). held are server's held tools
// ([Quarantined]). It returns the tools approved: none when none is held.
// It approves nothing when a name is not held (an error matching
// [ErrNotHeld]) or when the server lists a name twice (one matching
// [manifest.ErrRepeated]).
func Approve(store *manifest.Store, log *audit.Log, server string, held []Held, tools []string) ([]*mcp.Tool, error) {
	return decide(store.Approve, audit.OutcomeApproved, log, server, held, tools)
}

// Deny records that a person refused the current definitions of the
// tools of server named (all its held tools when none is), as [Approve]
// takes them: they stay quarantined, and [Held.Denied] says when they
// were denied until their definitions change again.
func Deny(store *manifest.Store, log *audit.Log, server string, held []Held, tools []string) ([]*mcp.Tool, error) {
	return decide(store.Deny, audit.OutcomeDenied, log, server, held, tools)
}

// decide applies a person's decision (record, audited as outcome) to the
// held tools named.
func decide(record func(server string, tools []*mcp.Tool) error, outcome string, log *audit.Log, server string, held []Held, tools []string) ([]*mcp.Tool, error) {
	if repeats := Repeated(held); len(repeats) > 0 {
		return nil, fmt.Errorf("%w: %q lists %q more than once, and which definition code would get is the server's choice: nothing %s; fix or remove the server",
			manifest.ErrRepeated, server, strings.Join(repeats, ", "), outcome)
	}
	var chosen []*mcp.Tool
	var names []string
	for _, h := range held {
		if len(tools) == 0 || slices.Contains(tools, h.Now.Name) {
			chosen = append(chosen, h.Now)
			names = append(names, h.Now.Name)
		}
	}
	for _, t := range tools {
		if !slices.Contains(names, t) {
			return nil, fmt.Errorf("%q has %w %q: nothing %s", server, ErrNotHeld, t, outcome)
		}
	}
	if len(chosen) == 0 {
		return nil, nil
	}
	if err := record(server, chosen); err != nil {
		return nil, err
	}
	if log != nil {
		for _, t := range chosen {
			log.Record(audit.Record{Kind: audit.KindPin, Time: time.Now(), Server: server, Tool: t.Name, Outcome: outcome})
		}
	}
	return chosen, nil
}

// DefinitionLines is t's pinned definition as lines to compare: its
// description as it reads, then its schemas and annotations as pretty JSON
// with sorted keys.
func DefinitionLines(t *mcp.Tool) []string {
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

// diffContext is how many unchanged lines LineDiff keeps around a change.
const diffContext = 3

// LineDiff is a line diff of a and b by longest common subsequence: each
// line prefixed "  " (in both), "- " (only in a) or "+ " (only in b), and
// runs of unchanged lines further than diffContext from a change cut to
// "  ...". Inputs too large for the table compare as all removed, then all
// added.
func LineDiff(a, b []string) []string {
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
