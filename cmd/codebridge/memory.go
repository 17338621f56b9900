package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
)

// memoryHelp is the help of codebridge memory, its verbs from [memoryVerbs].
var memoryHelp = func() string {
	var b strings.Builder
	b.WriteString(`Usage: codebridge memory [VERB [ARG]]

Shows and removes what agents stored with save_memory and save_tool.

`)
	for _, v := range memoryVerbs {
		listLine(&b, strings.TrimSpace("codebridge memory "+v.name+" "+v.arg), v.summary)
	}
	b.WriteString(`
To name a key such as -h, put -- before it: codebridge memory show -- -h
They are files under the state directory (MCP_BRIDGE_STATE_DIR), in memory/ and
tools/; they are safe to remove while codebridge runs.
`)
	return b.String()
}()

// A memoryVerb is one verb of codebridge memory.
type memoryVerb struct {
	name    string
	arg     string // the name of its one operand; "" when it takes none
	summary string
	// run runs the verb on arg ("" when it takes none); an error is a failure.
	run func(st *memory.Store, arg string, stdout, stderr io.Writer) error
}

// memoryVerbs are the verbs of codebridge memory; the first is the default.
var memoryVerbs = []memoryVerb{
	{name: "list", summary: "the memories: key, size, last update, metadata (the default verb)", run: memoryList},
	{name: "show", arg: "KEY", summary: "one memory's value as JSON (its metadata and times go to stderr)", run: memoryShow},
	{name: "delete", arg: "KEY", summary: "remove a memory", run: memoryDelete("memory", (*memory.Store).Delete)},
	{name: "tools", summary: "the saved helpers every new session defines", run: memoryTools},
	{name: "show-tool", arg: "NAME", summary: "a saved helper's source", run: memoryShowTool},
	{name: "delete-tool", arg: "NAME", summary: "remove a saved helper (sessions already running keep it)",
		run: memoryDelete("saved helper", (*memory.Store).DeleteTool)},
}

// memoryCmd runs `codebridge memory ...` and returns the exit status.
func memoryCmd(_ context.Context, c *call) int {
	st := memory.New(c.cfg.StateDir)
	name, args := memoryVerbs[0].name, c.args
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	// The flags end at the verb; a help flag after it still means help.
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if helpAsked(args) {
		fmt.Fprintf(c.stdout, "%sHere: %s\n", memoryHelp, st.Dir())
		return 0
	}
	i := slices.IndexFunc(memoryVerbs, func(v memoryVerb) bool { return v.name == name })
	if i < 0 {
		fmt.Fprintf(c.stderr, "codebridge memory: unknown verb %q\n\n%s", name, memoryHelp)
		return 2
	}
	verb := memoryVerbs[i]
	n := 0
	if verb.arg != "" {
		n = 1
	}
	if len(args) != n {
		fmt.Fprintf(c.stderr, "codebridge memory %s: want %d argument(s), got %d\n\n%s", name, n, len(args), memoryHelp)
		return 2
	}
	if err := verb.run(st, strings.Join(args, ""), c.stdout, c.stderr); err != nil {
		fmt.Fprintf(c.stderr, "codebridge memory %s: %v\n", name, err)
		return 1
	}
	return 0
}

// helpAsked reports whether a help flag is among the operands after a verb.
func helpAsked(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

func memoryList(st *memory.Store, _ string, stdout, _ io.Writer) error {
	list, err := st.List()
	if err != nil {
		return err
	}
	return printTable(stdout, "no memories in "+st.Dir(), "KEY\tBYTES\tUPDATED\tMETADATA", list, func(m memory.Memory) string {
		return fmt.Sprintf("%s\t%d\t%s\t%s", termtext.Line(m.Key), m.Bytes, when(m.Updated), clip(termtext.Line(string(m.Metadata)), 60))
	})
}

func memoryShow(st *memory.Store, key string, stdout, stderr io.Writer) error {
	m, found, err := st.Load(key)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no memory %q ('codebridge memory list' shows them)", key)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, m.Value, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(m.Value)
	}
	fmt.Fprintf(stdout, "%s\n", termtext.Lines(pretty.String()))
	fmt.Fprintf(stderr, "%d bytes, created %s, updated %s\n", m.Bytes, when(m.Created), when(m.Updated))
	if len(m.Metadata) > 0 {
		fmt.Fprintf(stderr, "metadata: %s\n", termtext.Line(string(m.Metadata)))
	}
	return nil
}

// memoryDelete is the run of a verb that deletes one what with del.
func memoryDelete(what string, del func(*memory.Store, string) (bool, error)) func(*memory.Store, string, io.Writer, io.Writer) error {
	return func(st *memory.Store, name string, stdout, _ io.Writer) error {
		existed, err := del(st, name)
		if err != nil {
			return err
		}
		if !existed {
			return fmt.Errorf("no %s %q", what, name)
		}
		fmt.Fprintf(stdout, "deleted %s %s\n", what, name)
		return nil
	}
}

func memoryTools(st *memory.Store, _ string, stdout, _ io.Writer) error {
	tools, err := st.Tools()
	if err != nil {
		return err
	}
	return printTable(stdout, "no saved helpers in "+st.Dir(), "HELPER\tUPDATED\tDESCRIPTION", tools, func(t memory.Tool) string {
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		return fmt.Sprintf("%s\t%s\t%s", clip(termtext.Line(cmp.Or(t.Signature, t.Name)), 60), when(t.Updated), clip(termtext.Line(desc), 80))
	})
}

// printTable prints one row a line under header, in aligned columns, or the
// line empty when there are no rows. row escapes what others wrote
// ([termtext.Line]).
func printTable[T any](stdout io.Writer, empty, header string, rows []T, row func(T) string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(stdout, empty)
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for _, r := range rows {
		fmt.Fprintln(w, row(r))
	}
	return w.Flush()
}

func memoryShowTool(st *memory.Store, name string, stdout, _ io.Writer) error {
	tools, err := st.Tools()
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == name {
			fmt.Fprint(stdout, termtext.Lines(t.Source))
			return nil
		}
	}
	return fmt.Errorf("no saved helper %q ('codebridge memory tools' lists them)", name)
}

// when formats a stored time for a terminal, in local time.
func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// clip shortens s to n characters, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
