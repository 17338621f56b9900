package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// askDirectory hands each run's questions to its host.
type askDirectory struct{}

func (askDirectory) Prepare(context.Context, []string) ([]protocol.ServerInfo, error) {
	return nil, nil
}

func (askDirectory) Host(run host.Run) protocol.Handler { return askHost{ask: run.Ask} }

// askHost answers a call of tool "confirm", "elicit", "sample" or "roots"
// by asking the person that question through the run's session, and
// returns what came back as text.
type askHost struct {
	protocol.Refuse
	ask *elicit.Session
}

func (h askHost) CallTool(ctx context.Context, p protocol.CallToolParams) (protocol.CallToolResult, error) {
	var out string
	switch *p.Tool {
	case "confirm":
		a, err := h.ask.Confirm(ctx, "srv", "drop", json.RawMessage(`{}`), "a test rule")
		if err != nil {
			return protocol.CallToolResult{}, err
		}
		out = string(a)
	case "elicit":
		r, err := h.ask.Forward(ctx, "srv", &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return protocol.CallToolResult{}, err
		}
		out = r.Action + " " + fmt.Sprint(r.Content["name"])
	case "sample":
		r, err := h.ask.CreateMessage(ctx, "srv", &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return protocol.CallToolResult{}, err
		}
		out = r.Model + " " + r.Content.(*mcp.TextContent).Text
	case "roots":
		r, err := h.ask.ListRoots(ctx)
		if err != nil {
			return protocol.CallToolResult{}, err
		}
		out = r.Roots[0].URI
	}
	raw, _ := json.Marshal(out)
	return protocol.CallToolResult{RawMessage: raw}, nil
}

// askRunner calls, one after another, the tools its code names (one per
// line), and prints what each returned.
type askRunner struct{}

func (askRunner) End(context.Context, string)    {}
func (askRunner) Detach(context.Context, string) {}

func (askRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	h := req.Host(sandbox.SessionInfo{ID: "s1", Run: 1})
	var out strings.Builder
	for _, tool := range strings.Fields(req.Program.Code) {
		raw, err := h.Call(ctx, protocol.MethodCallTool, json.RawMessage(fmt.Sprintf(`{"server":"srv","tool":%q}`, tool)))
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", tool, err)
			continue
		}
		b, _ := json.Marshal(raw)
		var s string
		json.Unmarshal(b, &s)
		fmt.Fprintf(&out, "%s: %s\n", tool, s)
	}
	return &sandbox.Result{Result: &python.Result{Stdout: out.String()}}, nil
}

// askClient connects a go-sdk client speaking version ("" for its newest,
// 2026-07-28) with opts and one root.
func askClient(t *testing.T, s *Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "asked"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///work"})
	return connectClient(t, s, c, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// TestQuestionsBothWays: the same run's questions of every kind reach a
// client speaking MCP 2026-07-28 through input_required results of
// run_python, retried by go-sdk's client on its own, and a client speaking
// 2025-11-25 through requests of the server's own; the code sees the
// answers either way.
func TestQuestionsBothWays(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run(cmp.Or(version, "newest"), func(t *testing.T) {
			s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: askRunner{}, Servers: askDirectory{}}))
			var mu sync.Mutex
			var asked []string
			note := func(q string) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, q)
			}
			cs := askClient(t, s, version, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					note(r.Params.Message)
					if strings.Contains(r.Params.Message, "Allow it?") {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow once"}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					note(r.Params.SystemPrompt)
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
				},
			})
			res, _ := call(t, cs, map[string]any{"code": "confirm elicit sample roots"})
			want := "confirm: allow once\nelicit: accept Ada\nsample: m hello\nroots: file:///work\n"
			if got := text(res); got != want {
				t.Errorf("printed %q, want %q", got, want)
			}
			if len(asked) != 3 || !strings.Contains(asked[0], `"drop"`) || !strings.Contains(asked[1], `[MCP server "srv"`) || !strings.Contains(asked[2], `MCP server "srv"`) {
				t.Errorf("asked %q", asked)
			}
		})
	}
}

// TestInputRequiredRounds drives the rounds by hand: each question comes
// back as input_required with a requestState, which only this session may
// use and only once; the last retry gets the run's result.
func TestInputRequiredRounds(t *testing.T) {
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: askRunner{}, Servers: askDirectory{}}))
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("the server sent a request of its own to a 2026-07-28 client")
			return nil, nil
		}}
	cs := askClient(t, s, "", manual)
	other := askClient(t, s, "", manual)
	callWith := func(cs *mcp.ClientSession, state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": "confirm confirm"},
			RequestState: state, InputResponses: answers})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		return res
	}
	question := func(res *mcp.CallToolResult) string {
		t.Helper()
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("want one question, got %+v (%s)", res, text(res))
		}
		for id, q := range res.InputRequests {
			if p, ok := q.(*mcp.ElicitParams); !ok || !strings.Contains(p.Message, `"drop"`) {
				t.Fatalf("asked %#v", q)
			}
			return id
		}
		return ""
	}
	first := callWith(cs, "", nil)
	id := question(first)
	if res := callWith(other, first.RequestState, nil); !res.IsError || !strings.Contains(text(res), "requestState names no run") {
		t.Errorf("another session's retry: %s", text(res))
	}
	second := callWith(cs, first.RequestState, mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "decline"}})
	id2 := question(second)
	if res := callWith(cs, first.RequestState, nil); !res.IsError || !strings.Contains(text(res), "requestState names no run") {
		t.Errorf("a used state again: %s", text(res))
	}
	// No answer: asked again under a new state.
	third := callWith(cs, second.RequestState, nil)
	if question(third) != id2 {
		t.Errorf("the unanswered question came back as another")
	}
	last := callWith(cs, third.RequestState, mcp.InputResponseMap{id2: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow once"}}})
	if last.NeedsInput() || text(last) != "confirm: decline\nconfirm: allow once\n" {
		t.Errorf("result %s", text(last))
	}
}

// TestSuspendedRunEndsWithSession: a run waiting for answers ends when its
// MCP session does, without waiting for its time limit.
func TestSuspendedRunEndsWithSession(t *testing.T) {
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: askRunner{}, Servers: askDirectory{}}))
	cs := askClient(t, s, "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": "confirm"}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("want input_required, got %+v, %v", res, err)
	}
	if s.Runs() != 1 {
		t.Fatalf("%d runs in progress, want the suspended one", s.Runs())
	}
	cs.Close()
	// The guard only bounds a failure; the run's own limit is far longer.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !s.runs.Wait(ctx) {
		t.Fatal("the suspended run outlived its MCP session")
	}
}
