package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

const checkHelp = `Usage: codebridge check [--json] [SERVER[.TOOL]...]

Says whether each tool could be called now, without calling it: ready, or
why not, by the same rules a call from code meets:

  not_configured    no such server, or it is disabled or its entry is invalid
  not_found         the server has no such tool
  quarantined       its definition changed since it was pinned (or is new, or
                    the poisoning scanner holds it): codebridge tools review
  denied            the server's or the global tool policy blocks it
  sign_in_required  the server needs you to sign in: codebridge login SERVER
  starting          the server is still starting after 10 s
  failed            the server did not start, or could not list its tools

SERVER alone checks the server; without operands, every configured server.
A server that is not running is started, as a call would start it, and
stopped again when the check ends. Code in the sandbox asks the same with
await check_tools(["server.tool", ...]).

Flags:
  --json   print one JSON object per tool: {server, tool, status, message}

Exit status: 0 when every tool is ready; 1 when one is not; 2 when the
command line is wrong.
`

// checkCommand defines check's flags and returns its run function.
func checkCommand(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON lines")
	return func(ctx context.Context, c *call) int {
		var checks protocol.ToolChecks
		err := c.withListing(ctx, func(l *bridge.Listing) error {
			refs := toolRefs(c.args, l.Config())
			if len(refs) == 0 {
				return fmt.Errorf("no MCP servers are configured in %s, so there is nothing to check: add a JSON file there", c.cfg.ConfigDir)
			}
			checks = l.Check(ctx, refs)
			return nil
		})
		if err != nil {
			return c.exit(err)
		}
		if *asJSON {
			enc := json.NewEncoder(c.stdout)
			for _, ch := range checks {
				enc.Encode(ch)
			}
		} else {
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "STATUS\tTOOL\tWHAT TO DO")
			for _, ch := range checks {
				name := ch.Server
				if ch.Tool != "" {
					name += "." + ch.Tool
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", ch.Status, termtext.Line(name), termtext.Line(ch.Message))
			}
			w.Flush()
		}
		if slices.ContainsFunc(checks, func(ch protocol.ToolCheck) bool { return ch.Status != protocol.Ready }) {
			return 1
		}
		return 0
	}
}

// toolRefs reads check's operands SERVER[.TOOL]: the name is split after
// the longest configured server name it starts with, so a server or tool
// with dots of its own is read as meant; else at its first dot. No
// operands means every configured server.
func toolRefs(args []string, conf *discovery.Config) []protocol.ToolRef {
	var names []string
	for _, srv := range conf.Servers {
		names = append(names, srv.Name)
	}
	if len(args) == 0 {
		refs := make([]protocol.ToolRef, len(names))
		for i, n := range names {
			refs[i] = protocol.ToolRef{Server: n}
		}
		return refs
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	refs := make([]protocol.ToolRef, len(args))
	for i, arg := range args {
		server, tool, _ := strings.Cut(arg, ".")
		for _, n := range names {
			if arg == n || strings.HasPrefix(arg, n+".") {
				server, tool = n, strings.TrimPrefix(arg[len(n):], ".")
				break
			}
		}
		refs[i] = protocol.ToolRef{Server: server, Tool: tool}
	}
	return refs
}
