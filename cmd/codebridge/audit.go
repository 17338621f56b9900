package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
)

const auditHelp = `Usage: codebridge audit [-n N] [--json] [--server NAME] [--session ID] [--tool NAME] [--outcome OUTCOME] [--errors]

Shows the most recent MCP tool calls that sandboxed code made, oldest first:
when, which sandbox session and run, which server and tool, how long it took,
the outcome (ok, tool_error, cancelled when the run ended during the call, or
the error the code got: policy_denied, unknown_tool, unknown_server,
bad_arguments, server_failed, timeout, internal, quarantined)
and the sizes of the arguments and the result in bytes. Among them are the
changes to pinned tool definitions, without a session: outcome quarantined
(a tool's definition changed; what changed under ERROR) and approved
('codebridge tools approve').

Flags:
  -n N               show the last N calls (default 20; 0 for all)
  --json             print the records as JSON lines, as they are stored
  --server NAME      only calls to this server
  --session ID       only calls from this sandbox session (run_python's result names it)
  --tool NAME        only calls of this tool
  --outcome OUTCOME  only calls with this outcome
  --errors           only calls whose outcome is not ok

The records are JSON lines in audit/calls.jsonl under the state directory
(MCP_BRIDGE_STATE_DIR), rotated at MCP_BRIDGE_AUDIT_MAX_SIZE; MCP_BRIDGE_AUDIT=0
turns recording off and MCP_BRIDGE_AUDIT_CONTENTS=1 adds arguments and results.
`

// auditFilter is what `codebridge audit` shows.
type auditFilter struct {
	n                              int
	json, errors                   bool
	server, session, tool, outcome string
}

// auditCommand defines the flags of audit and returns its run function.
func auditCommand(fs *flag.FlagSet) runFunc {
	f := &auditFilter{}
	fs.IntVar(&f.n, "n", 20, "calls to show")
	fs.BoolVar(&f.json, "json", false, "print JSON lines")
	fs.BoolVar(&f.errors, "errors", false, "only calls that did not succeed")
	fs.StringVar(&f.server, "server", "", "only this server")
	fs.StringVar(&f.session, "session", "", "only this session")
	fs.StringVar(&f.tool, "tool", "", "only this tool")
	fs.StringVar(&f.outcome, "outcome", "", "only this outcome")
	return func(_ context.Context, c *call) int { return auditCmd(c.cfg, f, c.stdout, c.stderr) }
}

func (f *auditFilter) keep(r *audit.Record) bool {
	return (f.server == "" || r.Server == f.server) && (f.session == "" || r.Session == f.session) &&
		(f.tool == "" || r.Tool == f.tool) && (f.outcome == "" || r.Outcome == f.outcome) &&
		(!f.errors || r.Outcome != audit.OutcomeOK)
}

// auditCmd runs `codebridge audit` and returns the exit status.
func auditCmd(cfg settings.Config, f *auditFilter, stdout, stderr io.Writer) int {
	if f.n < 0 {
		fmt.Fprintf(stderr, "codebridge audit: -n %d: want 0 (all) or more\n", f.n)
		return 2
	}
	dir := audit.Dir(cfg.StateDir)
	recs, skipped, err := audit.Tail(dir, f.n, f.keep)
	if err != nil {
		fmt.Fprintf(stderr, "codebridge audit: %v\n", err)
		return 1
	}
	if skipped > 0 {
		fmt.Fprintf(stderr, "codebridge audit: skipped %d line(s) in %s that are not records (cut short by a crash?)\n", skipped, dir)
	}
	if len(recs) == 0 {
		if f.json {
			return 0
		}
		fmt.Fprintf(stdout, "no tool calls recorded in %s", dir)
		if !cfg.Audit {
			fmt.Fprint(stdout, " (recording is off: MCP_BRIDGE_AUDIT=0)")
		}
		fmt.Fprintln(stdout)
		return 0
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		for _, r := range recs {
			enc.Encode(r)
		}
		return 0
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tSESSION\tRUN\tSERVER\tTOOL\tMS\tOUTCOME\tARGS\tRESULT\tERROR")
	// Names come from sandboxed code (an unknown server or tool stays as
	// the code wrote it) and servers: each cell escaped, so none can forge
	// a row or send the terminal commands.
	cell := termtext.Line
	for _, r := range recs {
		what := r.Tool // a resource's URI, a prompt's name: said so
		switch r.Kind {
		case audit.KindResource, audit.KindPrompt, audit.KindMemorySave, audit.KindMemoryDelete, audit.KindToolSave, audit.KindToolDelete:
			what = r.Kind + " " + r.Tool
		case audit.KindSignIn:
			what = "sign-in (" + r.Confirm + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n",
			r.Time.Local().Format("2006-01-02 15:04:05.000"), clip(cell(r.Session), 40), r.Run, clip(cell(r.Server), 40), clip(cell(what), 40),
			strconv.FormatFloat(r.DurationMS, 'f', 1, 64), clip(cell(r.Outcome), 40), r.ArgBytes, r.ResultBytes, clip(cell(r.Error), 100))
	}
	w.Flush()
	return 0
}
