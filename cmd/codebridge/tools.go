package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/codebridge-mcp/codebridge/bridge"
)

// toolsHelp is the help of codebridge tools, its verbs from [toolsVerbs].
var toolsHelp = func() string {
	var b strings.Builder
	b.WriteString(`Usage: codebridge tools VERB [ARG...]

Each server's tool definitions (name, description, input and output schema,
annotations) are pinned when codebridge first sees them. A tool whose
definition changes later is quarantined: code cannot see or call it (the call
fails with MCPError code quarantined) until you approve the change here.
With MCP_BRIDGE_QUARANTINE_NEW=1, tools never pinned are quarantined too.
Before a new or changed definition is pinned it is scanned for tool
poisoning (text aimed at the model, private paths, hidden characters...);
what the scanner finds holds it the same way, and review shows the findings.
A server with "trust": "trusted" in its entry is not scanned.

`)
	for _, v := range toolsVerbs {
		listLine(&b, "codebridge tools "+v.name+" "+v.args, v.summary)
	}
	b.WriteString(`
Each starts the servers to list their tools as they are now, as
'codebridge servers --tools' does. Approvals, denials and quarantines are
recorded in the audit log ('codebridge audit'). A denied definition stays
quarantined, as every held one does until approved, and review marks it
denied; when the tool changes again, its new definition waits for review.

Exit status: 0 when done; 1 when review showed a quarantined tool, or a
server could not be listed; 2 when the command line is wrong.
`)
	return b.String()
}()

// A toolsVerb is one verb of codebridge tools.
type toolsVerb struct {
	name, args, summary string
	min, max            int // operands; max -1 for any number
	run                 func(ctx context.Context, c *call, args []string) error
}

// toolsVerbs are the verbs of codebridge tools.
var toolsVerbs = []toolsVerb{
	{name: "review", args: "[SERVER]", min: 0, max: 1,
		summary: "what changed in each quarantined tool: a line\ndiff of its pinned and current description and schemas",
		run: func(ctx context.Context, c *call, args []string) error {
			return c.withListing(ctx, func(l *bridge.Listing) error {
				return reviewTools(ctx, c.cfg, l, strings.Join(args, ""), c.stdout)
			})
		}},
	{name: "approve", args: "SERVER [TOOL...]", min: 1, max: -1,
		summary: "accept the current definitions of the tools\nnamed, or of every quarantined tool of SERVER",
		run: func(ctx context.Context, c *call, args []string) error {
			return c.withListing(ctx, func(l *bridge.Listing) error {
				return approveTools(ctx, c.cfg, l, args[0], args[1:], c.stdout)
			})
		}},
	{name: "deny", args: "SERVER [TOOL...]", min: 1, max: -1,
		summary: "refuse the current definitions of the tools\nnamed, or of every quarantined tool of SERVER:\nthey stay quarantined, and review says so",
		run: func(ctx context.Context, c *call, args []string) error {
			return c.withListing(ctx, func(l *bridge.Listing) error {
				return denyTools(ctx, c.cfg, l, args[0], args[1:], c.stdout)
			})
		}},
}

// toolsCmd runs `codebridge tools ...` and returns the exit status.
func toolsCmd(ctx context.Context, c *call) int {
	if len(c.args) == 0 {
		fmt.Fprintf(c.stderr, "codebridge tools: want a verb\n\n%s", toolsHelp)
		return 2
	}
	name, args := c.args[0], c.args[1:]
	if helpAsked(args) {
		fmt.Fprint(c.stdout, toolsHelp)
		return 0
	}
	i := slices.IndexFunc(toolsVerbs, func(v toolsVerb) bool { return v.name == name })
	if i < 0 {
		fmt.Fprintf(c.stderr, "codebridge tools: unknown verb %q\n\n%s", name, toolsHelp)
		return 2
	}
	verb := toolsVerbs[i]
	if len(args) < verb.min || verb.max >= 0 && len(args) > verb.max {
		fmt.Fprintf(c.stderr, "codebridge tools %s: want %s\n\n%s", name, verb.args, toolsHelp)
		return 2
	}
	err := verb.run(ctx, c, args)
	if errors.Is(err, errQuarantined) {
		return 1 // shown on stdout
	}
	return c.exit(err)
}
