package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argServerEnv, set in its environment to a file's path, makes the test
// binary a stdio MCP server with two tools, note(text) and query(sql,
// limit: integer), that appends a line to that file for every call it
// receives: what the server saw, for a test to read.
const argServerEnv = "CODEBRIDGE_TEST_ARG_SERVER"

// runArgServer serves note and query on stdin and stdout until stdin closes.
func runArgServer() {
	record := func(line string) {
		f, err := os.OpenFile(os.Getenv(argServerEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "arg-test", Version: "1"}, nil)
	type noteArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Adds a note."},
		func(_ context.Context, _ *mcp.CallToolRequest, a noteArgs) (*mcp.CallToolResult, any, error) {
			record("note " + a.Text)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted"}}}, nil, nil
		})
	type queryArgs struct {
		SQL   string `json:"sql"`
		Limit int    `json:"limit,omitempty" jsonschema:"rows at most"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "query", Description: "Runs a query."},
		func(_ context.Context, _ *mcp.CallToolRequest, a queryArgs) (*mcp.CallToolResult, any, error) {
			record(fmt.Sprintf("query %s %d", a.SQL, a.Limit))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rows"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "arg server:", err)
	}
}

// TestArgumentCheckEndToEnd: through a real codebridge, sandbox and
// downstream server, a run whose first line has side effects (a file in the
// session's /tmp, a print, a call the server records) and whose last call
// has a typo in an argument name, or a string for an integer, fails with
// argument_check, naming the line, the argument and the signature, and
// none of its lines ran: the output lacks the print, the server saw no
// call, and the next run of the session finds no file. With
// MCP_BRIDGE_CHECK_ARGS=0 the same run executes its first line.
func TestArgumentCheckEndToEnd(t *testing.T) {
	requirePodman(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const first = "open('/tmp/side-effect', 'w').write('ran'); print('side effect'); await mcp_db.note(text='first')\n"
	for _, tt := range []struct {
		name, code, check string
		want              []string // in the failure; none: the check is off
	}{
		{name: "typo in a name", code: first + "rows = await mcp_db.query(sql='select 1', limt=5)", check: "1",
			want: []string{`line 2: mcp_db.query(limt=5): no argument "limt"; did you mean "limit"?`, "signature: query(*, sql: str, limit: int = None) -> Any"}},
		{name: "string for an integer", code: first + "rows = await mcp_db.query(sql='select 1', limit='5')", check: "1",
			want: []string{`line 2: mcp_db.query(limit='5'): "limit" is str '5'; the tool wants int (integer)`, "signature: query(*, sql: str, limit: int = None) -> Any"}},
		{name: "check off", code: first + "rows = await mcp_db.query(sql='select 1', limt=5)", check: "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(t.TempDir(), "calls")
			writeServers(t, dir, "db.json", map[string]any{
				"db": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{argServerEnv: calls}},
			})
			cs, _ := session(t, bridgeEnv(t, dir, "MCP_BRIDGE_CHECK_ARGS="+tt.check))
			r := runPython(t, cs, map[string]any{"code": tt.code})
			seen, _ := os.ReadFile(calls)
			after := mustRun(t, cs, "import os; print(os.path.exists('/tmp/side-effect'))")
			if len(tt.want) == 0 {
				if !strings.Contains(r.Out.Stdout, "side effect") || string(seen) != "note first\n" || after != "True\n" {
					t.Errorf("with the check off the first line did not run: stdout %q, server saw %q, file left: %s", r.Out.Stdout, seen, after)
				}
				return
			}
			if !r.IsError || r.Out.Error == nil || r.Out.Error.Kind != "argument_check" {
				t.Fatalf("want an argument_check failure; got\n%s", r.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Out.Error.Message, w) || !strings.Contains(r.Text, w) {
					t.Errorf("the failure lacks %q:\n%s", w, r.Text)
				}
			}
			if strings.Contains(r.Text, "side effect") || len(seen) != 0 || after != "False\n" {
				t.Errorf("the first line ran: result %q, server saw %q, file left: %s", r.Text, seen, after)
			}
		})
	}
}
