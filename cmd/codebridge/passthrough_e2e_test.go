package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// passthroughPlan is what testdata/ts_passthrough.mjs does.
type passthroughPlan struct {
	Declare bool           `json:"declare"`
	Elicit  map[string]any `json:"elicit,omitempty"`
	Sample  string         `json:"sample,omitempty"`
	Steps   []tsStep       `json:"steps"`
}

// passthroughResult is one step's line: run_python's result, the requests
// the client's handlers saw meanwhile, and the loggers of the log messages
// it received.
type passthroughResult struct {
	tsResult
	Seen []seenRequest `json:"seen"`
	Logs []string      `json:"logs"`
}

// seenRequest is a request the client's handlers saw.
type seenRequest struct {
	Method       string         `json:"method"`
	Message      string         `json:"message"`
	SystemPrompt string         `json:"systemPrompt"`
	Meta         map[string]any `json:"meta"`
}

// seenOf returns the requests of one method among those a client saw.
func seenOf(seen []seenRequest, method string) []seenRequest {
	var out []seenRequest
	for _, r := range seen {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

func tsPassthrough(t *testing.T, plan passthroughPlan) []passthroughResult {
	t.Helper()
	dir := t.TempDir()
	writeServers(t, dir, "s.json", map[string]any{
		"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")},
	})
	raw, _ := json.Marshal(plan)
	return nodeResults[passthroughResult](t, "ts_passthrough.mjs", []string{binary(t), string(raw)}, bridgeEnv(t, dir), len(plan.Steps))
}

// TestPassthroughThroughTSClient: through the official TypeScript client
// with elicitation, sampling and roots handlers, code calls
// server-everything's trigger-elicitation-request, trigger-sampling-request
// and get-roots-list; the client's handlers see the requests naming the
// server, and their answers come back to the code.
func TestPassthroughThroughTSClient(t *testing.T) {
	requirePodman(t)
	rs := tsPassthrough(t, passthroughPlan{
		Declare: true,
		Elicit:  map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace", "check": true}},
		Sample:  "forty-two",
		Steps: []tsStep{
			{Code: `print(await call_tool("everything", "trigger-elicitation-request", {}))`},
			{Code: `print(await call_tool("everything", "trigger-sampling-request", {"prompt": "the answer?"}))`},
			{Code: `print(await call_tool("everything", "get-roots-list", {}))`},
		},
	})
	elicited, sampled, roots := rs[0], rs[1], rs[2]
	for _, r := range rs {
		t.Logf("code printed:\n%s\nclient saw: %+v; log messages from: %q", r.Out.Stdout, r.Seen, r.Logs)
	}

	if elicited.IsError || !strings.Contains(elicited.Out.Stdout, "Name: Ada Lovelace") || !strings.Contains(elicited.Out.Stdout, "Agreed to terms: true") {
		t.Errorf("elicitation: the answer did not come back to the code:\n%s", elicited.Text)
	}
	// server-everything also asks for the roots on its own, whenever it
	// likes: a roots/list may land in any step, so each step counts only the
	// requests of its own kind.
	if seen := seenOf(elicited.Seen, "elicitation/create"); len(seen) != 1 ||
		!strings.HasPrefix(seen[0].Message, `[MCP server "everything"`) ||
		!strings.Contains(seen[0].Message, "Please provide inputs") {
		t.Errorf("elicitation: the client saw %+v, want one elicitation/create naming server everything", elicited.Seen)
	}

	if sampled.IsError || !strings.Contains(sampled.Out.Stdout, "forty-two") {
		t.Errorf("sampling: the answer did not come back to the code:\n%s", sampled.Text)
	}
	if seen := seenOf(sampled.Seen, "sampling/createMessage"); len(seen) != 1 ||
		!strings.Contains(seen[0].SystemPrompt, `MCP server "everything"`) ||
		!strings.Contains(seen[0].SystemPrompt, "You are a helpful test server.") ||
		seen[0].Meta["codebridge/server"] != "everything" {
		t.Errorf("sampling: the client saw %+v, want one sampling/createMessage naming server everything", sampled.Seen)
	}

	if roots.IsError || !strings.Contains(roots.Out.Stdout, "file:///work/project") {
		t.Errorf("roots: the client's root did not reach the server:\n%s", roots.Text)
	}
	// server-everything sends log messages when it pleases (after it asks
	// for the roots, at random levels), so whether one lands within these
	// runs is not the test's to decide: what arrived is shown, and
	// bridge/elicit's TestPassthrough checks the forwarding and the level.
	var logs []string
	for _, r := range rs {
		logs = append(logs, r.Logs...)
	}
	for _, l := range logs {
		if !strings.HasPrefix(l, "everything") {
			t.Errorf("a log message's logger is %q, want it named after the server (everything/...)", l)
		}
	}
	t.Logf("log messages came from %q", logs)
}

// TestPassthroughNotDeclared: a client that declares none of elicitation,
// sampling or roots is not offered the tools that need them, and a call
// gets a clear error.
func TestPassthroughNotDeclared(t *testing.T) {
	requirePodman(t)
	rs := tsPassthrough(t, passthroughPlan{Steps: []tsStep{
		{Code: `
wanted = ("trigger-elicitation-request", "trigger-sampling-request", "get-roots-list")
print("listed:", [t["name"] for t in await list_tools("everything") if t["name"] in wanted])
print("searched:", [d["tool"] for d in await search_tool_docs("trigger sampling elicitation request roots", limit=50) if d["tool"] in wanted])
try:
    await call_tool("everything", "trigger-sampling-request", {"prompt": "x"})
except MCPError as e:
    print("error:", e.code, e.message)
`},
	}})
	out := rs[0].Out.Stdout
	t.Logf("code printed:\n%s", out)
	for _, want := range []string{"listed: []", "searched: []", "error: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, rs[0].Text)
		}
	}
	if !strings.Contains(out, "unknown_tool") || !strings.Contains(out, "trigger-sampling-request") ||
		!strings.Contains(out, "only to clients that declare MCP elicitation, sampling, roots: the agent's client did not") {
		t.Errorf("the error does not name the tool and say why it is missing:\n%s", out)
	}
}
