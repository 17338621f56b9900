package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestQuestionsThroughNewestGoClient: go-sdk's client negotiates MCP
// 2026-07-28, in which codebridge may not send requests of its own while
// it serves run_python; the run's questions come back as input_required
// results, and the client's own multi-round-trip support answers them
// through its handlers and calls again. An approval allowed once lets the
// call through and one declined refuses it; server-everything's
// elicitation, sampling and roots requests reach the handlers named after
// the server, and the answers reach the code.
func TestQuestionsThroughNewestGoClient(t *testing.T) {
	requirePodman(t)
	var mu sync.Mutex
	var asked []string
	decisions := []string{"allow once", "decline"}
	client := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, r.Params.Message)
			if strings.Contains(r.Params.Message, "Allow it?") {
				d := decisions[0]
				decisions = decisions[1:]
				if d == "decline" {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, r.Params.SystemPrompt)
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	}
	env := bridgeEnv(t, confirmServers(t))
	c := mcp.NewClient(&mcp.Implementation{Name: "codebridge-e2e", Version: "1"}, client)
	c.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	cs, _, _ := sessionOf(t, env, c)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client negotiated MCP %s, want 2026-07-28", v)
	}
	lastAsked := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) == 0 {
			return ""
		}
		return asked[len(asked)-1]
	}

	for _, step := range []struct {
		name, code, printed, asked string
	}{
		{"allowed once", createEntity("Ada"), "created\n", `"name":"Ada"`},
		{"declined", createEntity("Bob"), `declined the person declined the call of tool "create_entities" of MCP server "memory"`, `"name":"Bob"`},
		{"elicitation", `print(await call_tool("everything", "trigger-elicitation-request", {}))`, "Name: Ada Lovelace", `[MCP server "everything"`},
		{"sampling", `print(await call_tool("everything", "trigger-sampling-request", {"prompt": "the answer?"}))`, "forty-two", `MCP server "everything"`},
		{"roots", `print(await call_tool("everything", "get-roots-list", {}))`, "file:///work/project", ""},
	} {
		r := runPython(t, cs, map[string]any{"code": step.code})
		if r.IsError || !strings.Contains(r.Out.Stdout, step.printed) {
			t.Errorf("%s: printed %q, want %q:\n%s", step.name, r.Out.Stdout, step.printed, r.Text)
		}
		if q := lastAsked(); step.asked != "" && !strings.Contains(q, step.asked) {
			t.Errorf("%s: the client was last asked %q, want it to say %q", step.name, q, step.asked)
		}
	}
}
