package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

const memoryHelp = `Usage: codebridge memory [VERB [ARG]]

Shows and removes what agents stored with save_memory and save_tool.

  codebridge memory list                 the memories: key, size, last update, metadata (the default verb)
  codebridge memory show KEY             one memory's value as JSON (its metadata and times go to stderr)
  codebridge memory delete KEY           remove a memory
  codebridge memory tools                the saved helpers every new session defines
  codebridge memory show-tool NAME       a saved helper's source
  codebridge memory delete-tool NAME     remove a saved helper (sessions already running keep it)

To name a key such as -h, put -- before it: codebridge memory show -- -h
They are files under the state directory (MCP_BRIDGE_STATE_DIR), in memory/ and
tools/; they are safe to remove while codebridge runs.
`

// memoryVerbs are the verbs of codebridge memory and how many arguments each takes.
var memoryVerbs = map[string]int{"list": 0, "tools": 0, "show": 1, "delete": 1, "show-tool": 1, "delete-tool": 1}

// memoryCmd runs `codebridge memory ...` and returns the exit status.
func memoryCmd(cfg settings.Config, args []string, stdout, stderr io.Writer) int {
	st := memory.New(cfg.StateDir)
	verb := "list"
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	// main's flags end at the verb; a help flag after it still means help.
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else {
		for _, a := range args {
			switch a {
			case "-h", "-help", "--help":
				fmt.Fprintf(stdout, "%sHere: %s\n", memoryHelp, st.Dir())
				return 0
			}
		}
	}
	n, ok := memoryVerbs[verb]
	if !ok || len(args) != n {
		if !ok {
			fmt.Fprintf(stderr, "codebridge memory: unknown verb %q\n\n", verb)
		} else {
			fmt.Fprintf(stderr, "codebridge memory %s: want %d argument(s), got %d\n\n", verb, n, len(args))
		}
		fmt.Fprint(stderr, memoryHelp)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "codebridge memory %s: %v\n", verb, err)
		return 1
	}
	switch verb {
	case "list":
		list, err := st.List()
		if err != nil {
			return fail(err)
		}
		if len(list) == 0 {
			fmt.Fprintf(stdout, "no memories in %s\n", st.Dir())
			return 0
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "KEY\tBYTES\tUPDATED\tMETADATA")
		for _, m := range list {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", m.Key, m.Bytes, when(m.Updated), clip(string(m.Metadata), 60))
		}
		w.Flush()
	case "show":
		m, found, err := st.Load(args[0])
		if err != nil {
			return fail(err)
		}
		if !found {
			return fail(fmt.Errorf("no memory %q ('codebridge memory list' shows them)", args[0]))
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, m.Value, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(m.Value)
		}
		fmt.Fprintf(stdout, "%s\n", pretty.Bytes())
		fmt.Fprintf(stderr, "%d bytes, created %s, updated %s\n", m.Bytes, when(m.Created), when(m.Updated))
		if len(m.Metadata) > 0 {
			fmt.Fprintf(stderr, "metadata: %s\n", m.Metadata)
		}
	case "delete", "delete-tool":
		del, what := st.Delete, "memory"
		if verb == "delete-tool" {
			del, what = st.DeleteTool, "saved helper"
		}
		existed, err := del(args[0])
		if err != nil {
			return fail(err)
		}
		if !existed {
			return fail(fmt.Errorf("no %s %q", what, args[0]))
		}
		fmt.Fprintf(stdout, "deleted %s %s\n", what, args[0])
	case "tools", "show-tool":
		tools, err := st.Tools()
		if err != nil {
			return fail(err)
		}
		if verb == "show-tool" {
			for _, t := range tools {
				if t.Name == args[0] {
					fmt.Fprint(stdout, t.Source)
					return 0
				}
			}
			return fail(fmt.Errorf("no saved helper %q ('codebridge memory tools' lists them)", args[0]))
		}
		if len(tools) == 0 {
			fmt.Fprintf(stdout, "no saved helpers in %s\n", st.Dir())
			return 0
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "HELPER\tUPDATED\tDESCRIPTION")
		for _, t := range tools {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
			fmt.Fprintf(w, "%s\t%s\t%s\n", clip(cmp.Or(t.Signature, t.Name), 60), when(t.Updated), clip(desc, 80))
		}
		w.Flush()
	}
	return 0
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
