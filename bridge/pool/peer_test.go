package pool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// fakePeer answers as the agent's client would, and records the log
// messages it is given.
type fakePeer struct {
	name string

	mu   sync.Mutex
	logs []string
}

func (f *fakePeer) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": f.name + " answered " + p.Message}}, nil
}

func (f *fakePeer) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Role: "assistant", Model: "fake", Content: &mcp.TextContent{Text: f.name + " sampled"}}, nil
}

func (f *fakePeer) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///" + f.name}}}, nil
}

func (f *fakePeer) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprint(p.Data))
	return nil
}

func (f *fakePeer) logged() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.logs...)
}

// askingServer is a server whose "ask" tool asks its client everything a
// server may ask, and says what it was told; "caps" says what the client
// declared.
func askingServer() *mcp.Server {
	// MCP 2025-11-25, in which a server sends requests of its own while it
	// serves a call (from 2026-07-28 it returns input_required instead, which
	// the go-sdk client answers through the same handlers).
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "test"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}, SupportedProtocolVersions: []string{"2025-11-25"}})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "asking"})
		var out []string
		if e, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}}}); err != nil {
			out = append(out, "elicit error: "+err.Error())
		} else {
			out = append(out, fmt.Sprintf("elicit: %v", e.Content["who"]))
		}
		if m, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}); err != nil {
			out = append(out, "sample error: "+err.Error())
		} else {
			out = append(out, "sample: "+m.Content.(*mcp.TextContent).Text)
		}
		if r, err := req.Session.ListRoots(ctx, nil); err != nil {
			out = append(out, "roots error: "+err.Error())
		} else {
			out = append(out, "roots: "+r.Roots[0].URI)
		}
		return text(strings.Join(out, "\n")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		c := req.Session.InitializeParams().Capabilities
		return text(fmt.Sprintf("elicitation=%t sampling=%t roots=%t", c.Elicitation != nil, c.Sampling != nil, c.RootsV2 != nil)), nil, nil
	})
	return s
}

func newAskingPool(t *testing.T) (*Pool, *int) {
	t.Helper()
	p := newTestPool(t, Options{})
	starts := new(int)
	p.testTransport = func(*discovery.Server) (mcp.Transport, error) {
		*starts++
		ct, st := mcp.NewInMemoryTransports()
		if _, err := askingServer().Connect(t.Context(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	p.Update([]*discovery.Server{{Name: "s", Transport: discovery.Stdio, Command: "unused"}})
	return p, starts
}

var agentCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{}}

func TestPeerRouting(t *testing.T) {
	p, _ := newAskingPool(t)
	p.SetClientCapabilities(agentCaps)
	a, b := &fakePeer{name: "a"}, &fakePeer{name: "b"}
	for _, peer := range []*fakePeer{a, b} {
		res, err := p.CallFor(t.Context(), peer, "s", "ask", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("elicit: %[1]s answered name?\nsample: %[1]s sampled\nroots: file:///%[1]s", peer.name)
		if got := resultText(t, res); got != want {
			t.Errorf("call for %s: got\n%s\nwant\n%s", peer.name, got, want)
		}
	}
	// The log message sent during each call reached its caller.
	for _, peer := range []*fakePeer{a, b} {
		if got := peer.logged(); len(got) != 1 || got[0] != "asking" {
			t.Errorf("logs of %s = %q, want [asking]", peer.name, got)
		}
	}

	// A call without a peer: the server is told no one answers.
	res, err := p.Call(t.Context(), "s", "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := resultText(t, res)
	for _, what := range []string{"elicit error", "sample error", "roots error"} {
		if !strings.Contains(got, what) || !strings.Contains(got, "no call in flight") {
			t.Errorf("call without a peer: got\n%s\nwant %s saying no call in flight", got, what)
		}
	}
}

func TestClientCapabilities(t *testing.T) {
	tests := []struct {
		name   string
		caps   *mcp.ClientCapabilities // nil: never set
		want   string
		starts int
	}{
		{"never set", nil, "elicitation=false sampling=false roots=false", 1},
		{"none declared", &mcp.ClientCapabilities{}, "elicitation=false sampling=false roots=false", 1},
		{"all declared", agentCaps, "elicitation=true sampling=true roots=true", 2},
		{"sampling only", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, "elicitation=false sampling=true roots=false", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, starts := newAskingPool(t)
			// Started before the agent's client said what it can do...
			if _, err := p.Call(t.Context(), "s", "caps", nil, nil); err != nil {
				t.Fatal(err)
			}
			if tt.caps != nil {
				p.SetClientCapabilities(tt.caps)
			}
			// ...a later client changes nothing.
			p.SetClientCapabilities(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}})
			if tt.caps == nil {
				tt.want = "elicitation=true sampling=false roots=false"
				tt.starts = 2
			}
			res, err := p.Call(t.Context(), "s", "caps", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != tt.want {
				t.Errorf("server saw %q, want %q", got, tt.want)
			}
			if *starts != tt.starts {
				t.Errorf("server started %d times, want %d (restarted only to declare more)", *starts, tt.starts)
			}
		})
	}
}

// TestCallsRouting: with calls from several runs in flight, the most
// recent answers; between calls, log messages go to the latest caller.
func TestCallsRouting(t *testing.T) {
	var cs calls
	a, b := &fakePeer{name: "a"}, &fakePeer{name: "b"}
	if cs.current() != nil || cs.logTo() != nil {
		t.Fatal("a fresh conn has a peer")
	}
	endA := cs.begin(a)
	endNil := cs.begin(nil) // a call without a peer changes nothing
	endB := cs.begin(b)
	if got := cs.current(); got != b {
		t.Errorf("with a and b in flight, current = %v, want b (the latest)", got)
	}
	endB()
	if got := cs.current(); got != a {
		t.Errorf("after b ended, current = %v, want a", got)
	}
	endA()
	endNil()
	if got := cs.current(); got != nil {
		t.Errorf("with no call in flight, current = %v, want none", got)
	}
	if got := cs.logTo(); got != b {
		t.Errorf("with no call in flight, logTo = %v, want b (the latest caller)", got)
	}
}
