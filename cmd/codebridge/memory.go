package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
)

const memoryHelp = `Usage: codebridge memory [VERB]

Shows and removes what agents stored with save_memory and save_tool.

  codebridge memory list                 the memories: key, size, last update
  codebridge memory show KEY             one memory's value (JSON) and metadata
  codebridge memory delete KEY           remove a memory
  codebridge memory tools                the saved helpers every new session defines
  codebridge memory show-tool NAME       a saved helper's source
  codebridge memory delete-tool NAME     remove a saved helper

They are files under the state directory (MCP_BRIDGE_STATE_DIR).
`

// memoryCmd runs `codebridge memory ...` and returns the exit status.
func memoryCmd(cfg bridge.Config, args []string, stdout, stderr io.Writer) int {
	st := memory.New(cfg.StateDir)
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "%sHere: %s\n", memoryHelp, st.Dir()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	args = fs.Args()
	verb := "list"
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	want := map[string]int{"list": 0, "tools": 0, "show": 1, "delete": 1, "show-tool": 1, "delete-tool": 1}
	n, ok := want[verb]
	if !ok || len(args) != n {
		if !ok {
			fmt.Fprintf(stderr, "codebridge memory: unknown verb %q\n\n", verb)
		} else {
			fmt.Fprintf(stderr, "codebridge memory %s: want %d argument(s), got %d\n\n", verb, n, len(args))
		}
		fs.Usage()
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
		fmt.Fprintln(w, "KEY\tBYTES\tUPDATED")
		for _, m := range list {
			fmt.Fprintf(w, "%s\t%d\t%s\n", m.Key, m.Bytes, m.Updated.Local().Format("2006-01-02 15:04:05"))
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
		fmt.Fprintf(stdout, "%s\n", m.Value)
		if len(m.Metadata) > 0 {
			fmt.Fprintf(stderr, "metadata: %s\n", m.Metadata)
		}
	case "delete", "delete-tool":
		del := st.Delete
		if verb == "delete-tool" {
			del = st.DeleteTool
		}
		existed, err := del(args[0])
		if err != nil {
			return fail(err)
		}
		if !existed {
			return fail(fmt.Errorf("%q does not exist", args[0]))
		}
		fmt.Fprintf(stdout, "deleted %s\n", args[0])
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
		fmt.Fprintln(w, "NAME\tUPDATED\tDESCRIPTION")
		for _, t := range tools {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
			fmt.Fprintf(w, "%s\t%s\t%s\n", t.Name, t.Updated.Local().Format("2006-01-02 15:04:05"), desc)
		}
		w.Flush()
	}
	return 0
}
