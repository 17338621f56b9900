package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// fakePeer answers as the agent's client of MCP session principal would
// (name's when empty), and records what it was asked and the log messages
// it is given.
type fakePeer struct {
	name      string
	principal string

	mu    sync.Mutex
	asked []string
	logs  []string
}

func (f *fakePeer) Principal() string { return cmp.Or(f.principal, f.name) }

func (f *fakePeer) ask(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, method)
}

func (f *fakePeer) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	f.ask("elicitation/create")
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": f.name + " answered " + p.Message}}, nil
}

func (f *fakePeer) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	f.ask("sampling/createMessage")
	return &mcp.CreateMessageResult{Role: "assistant", Model: "fake", Content: &mcp.TextContent{Text: f.name + " sampled"}}, nil
}

func (f *fakePeer) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	f.ask("roots/list")
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///" + f.name}}}, nil
}

func (f *fakePeer) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprint(p.Data))
	return nil
}

func (f *fakePeer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func (f *fakePeer) logged() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.logs...)
}

// askingServer is a server whose "ask" tool asks its client everything a
// server may ask, and says what it was told; "caps" says what the client
// declared. Its "wait" tool, once its call is in the server, sends on
// h.entered and returns when h.release is closed or sent on.
func askingServer(w *waitTool) *mcp.Server {
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
	w.add(s)
	mcp.AddTool(s, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		c := req.Session.InitializeParams().Capabilities
		return text(fmt.Sprintf("elicitation=%t sampling=%t roots=%t", c.Elicitation != nil, c.Sampling != nil, c.RootsV2 != nil)), nil, nil
	})
	return s
}

// waitTool is how a test holds a call of a server's "wait" tool in
// flight.
type waitTool struct {
	entered chan struct{} // sent on once a call is in the server
	release chan struct{} // ends a call
}

// add adds the "wait" tool to s: once its call is in the server, it sends
// on w.entered, and returns when w.release is closed or sent on.
func (w *waitTool) add(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		if err := w.wait(ctx, w.entered, w.release); err != nil {
			return nil, nil, err
		}
		return text("waited"), nil, nil
	})
}

// wait sends on entered, then waits for release.
func (w *waitTool) wait(ctx context.Context, entered chan<- struct{}, release <-chan struct{}) error {
	select {
	case entered <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// multiRoundServer is a server speaking MCP 2026-07-28, whose "ask" tool
// asks its client questions in its result (input_required): first once it
// has sent on w.entered and w.release was closed, then it says what it was
// told. It has the "wait" tool too.
func multiRoundServer(w *waitTool, hold chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "test"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		in := req.Params.InputResponses
		if in == nil {
			if err := w.wait(ctx, w.entered, hold); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"e": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}}},
				"s": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
			}}, nil, nil
		}
		// In input responses, a sampling result is one with tools.
		e, _ := in["e"].(*mcp.ElicitResult)
		m, _ := in["s"].(*mcp.CreateMessageWithToolsResult)
		if e == nil || m == nil || len(m.Content) != 1 {
			return nil, nil, fmt.Errorf("input responses %#v, want an elicitation and a sampling result", in)
		}
		return text(fmt.Sprintf("elicit: %v\nsample: %s", e.Content["who"], m.Content[0].(*mcp.TextContent).Text)), nil, nil
	})
	w.add(s)
	return s
}

func newAskingPool(t *testing.T) (*Pool, *int) {
	p, starts, _ := newAskingPoolWait(t, askingServer)
	return p, starts
}

// newAskingPoolWait is newAskingPool with the server server makes, and the
// handle of its "wait" tool.
func newAskingPoolWait(t *testing.T, server func(*waitTool) *mcp.Server) (*Pool, *int, *waitTool) {
	t.Helper()
	p := newTestPool(t, Options{})
	starts := new(int)
	w := &waitTool{entered: make(chan struct{}), release: make(chan struct{})}
	p.testTransport = func(*discovery.Server) (mcp.Transport, error) {
		*starts++
		ct, st := mcp.NewInMemoryTransports()
		if _, err := server(w).Connect(t.Context(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	p.Update([]*discovery.Server{{Name: "s", Transport: discovery.Stdio, Command: "unused"}})
	return p, starts, w
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

// TestCallsRouting: with calls of one MCP session in flight, the most
// recent answers; with calls of several, or a call without a peer, none
// does and log messages are dropped; between calls, log messages go to
// the latest caller.
func TestCallsRouting(t *testing.T) {
	cs := calls{name: "s", logger: slog.New(slog.DiscardHandler)}
	a1, a2 := &fakePeer{name: "a1", principal: "a"}, &fakePeer{name: "a2", principal: "a"}
	b := &fakePeer{name: "b"}
	check := func(what string, want Peer, wantErr error, wantLogTo Peer) {
		t.Helper()
		got, err := cs.current("elicitation/create")
		if got != want || !errors.Is(err, wantErr) {
			t.Errorf("%s: current = %v, %v; want %v, %v", what, got, err, want, wantErr)
		}
		if got := cs.logTo(); got != wantLogTo {
			t.Errorf("%s: logTo = %v, want %v", what, got, wantLogTo)
		}
	}
	check("a fresh conn", nil, ErrNotForwarded, nil)
	endA1 := cs.begin(a1)
	endA2 := cs.begin(a2)
	check("with a1 and a2 of one session in flight", a2, nil, a2)
	endB := cs.begin(b)
	check("with a1, a2 and b in flight", nil, ErrSessionsShareServer, nil)
	endB()
	endA2()
	check("after a2 and b ended", a1, nil, a1)
	endNil := cs.begin(nil)
	check("with a1 and a call without a peer in flight", nil, ErrSessionsShareServer, nil)
	endA1()
	check("with only a call without a peer in flight", nil, ErrNotForwarded, nil)
	endNil()
	check("with no call in flight after a call without a peer", nil, ErrNotForwarded, nil)
	cs.begin(b)()
	check("with no call in flight", nil, ErrNotForwarded, b)
	if n := cs.droppedLogs(); n != 2 {
		t.Errorf("droppedLogs = %d, want 2", n)
	}
}

// TestPeerPrincipals: what a server asks while it serves calls made for
// more than one MCP session reaches none of them, since it does not say
// which call it serves; its log messages then are dropped and counted.
// With the calls of one MCP session in flight, it reaches that session.
func TestPeerPrincipals(t *testing.T) {
	tests := []struct {
		name          string
		waiter, asker *fakePeer // asker nil: a call without a peer
		answeredBy    *fakePeer // nil: refused
	}{
		{name: "two MCP sessions", waiter: &fakePeer{name: "a"}, asker: &fakePeer{name: "b"}},
		{name: "a call without a peer", waiter: &fakePeer{name: "a"}},
		{
			name:       "one MCP session",
			waiter:     &fakePeer{name: "a1", principal: "session"},
			asker:      &fakePeer{name: "a2", principal: "session"},
			answeredBy: nil, // set below: a2, the latest call
		},
	}
	tests[2].answeredBy = tests[2].asker
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, w := newAskingPoolWait(t, askingServer)
			p.SetClientCapabilities(agentCaps)
			waited := make(chan error, 1)
			go func() {
				_, err := p.CallFor(t.Context(), tt.waiter, "s", "wait", nil, nil)
				waited <- err
			}()
			<-w.entered // the waiter's call is in flight
			var asker Peer
			if tt.asker != nil {
				asker = tt.asker
			}
			res, err := p.CallFor(t.Context(), asker, "s", "ask", nil, nil)
			close(w.release)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			got := resultText(t, res)

			if tt.answeredBy != nil {
				want := fmt.Sprintf("elicit: %[1]s answered name?\nsample: %[1]s sampled\nroots: file:///%[1]s", tt.answeredBy.name)
				if got != want {
					t.Errorf("got\n%s\nwant\n%s", got, want)
				}
				if logs := tt.answeredBy.logged(); len(logs) != 1 || logs[0] != "asking" {
					t.Errorf("logs of %s = %q, want [asking]", tt.answeredBy.name, logs)
				}
				if n := statusOf(t, p, "s").DroppedLogs; n != 0 {
					t.Errorf("DroppedLogs = %d, want 0", n)
				}
				return
			}
			for _, what := range []string{"elicit error", "sample error", "roots error"} {
				if !strings.Contains(got, what+": ") || !strings.Contains(got, "more than one MCP session") {
					t.Errorf("the server was told\n%s\nwant %s saying calls of more than one MCP session are in flight", got, what)
				}
			}
			for _, peer := range []*fakePeer{tt.waiter, tt.asker} {
				if peer == nil {
					continue
				}
				if r := peer.requests(); len(r) != 0 {
					t.Errorf("%s was asked %q, want nothing", peer.name, r)
				}
				if logs := peer.logged(); len(logs) != 0 {
					t.Errorf("logs of %s = %q, want none", peer.name, logs)
				}
			}
			if n := statusOf(t, p, "s").DroppedLogs; n != 1 {
				t.Errorf("DroppedLogs = %d, want 1 (the log message sent while calls of two sessions were in flight)", n)
			}
		})
	}
}

// TestPeerMultiRoundTrip: a server speaking MCP 2026-07-28 asks in the
// result of the call it serves (input_required), so its questions reach
// the call's own peer, even while a later call of another MCP session is
// in flight.
func TestPeerMultiRoundTrip(t *testing.T) {
	hold := make(chan struct{})
	p, _, w := newAskingPoolWait(t, func(w *waitTool) *mcp.Server { return multiRoundServer(w, hold) })
	p.SetClientCapabilities(agentCaps)
	a, b := &fakePeer{name: "a"}, &fakePeer{name: "b"}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		res, err := p.CallFor(t.Context(), a, "s", "ask", nil, nil)
		asked <- answer{res, err}
	}()
	<-w.entered // a's call is in the server...
	waited := make(chan error, 1)
	go func() {
		_, err := p.CallFor(t.Context(), b, "s", "wait", nil, nil)
		waited <- err
	}()
	<-w.entered // ...and so is b's, which began later
	close(hold) // a's call now asks
	got := <-asked
	close(w.release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if text, want := resultText(t, got.res), "elicit: a answered name?\nsample: a sampled"; text != want {
		t.Errorf("got\n%s\nwant\n%s", text, want)
	}
	if r := b.requests(); len(r) != 0 {
		t.Errorf("b was asked %q, want nothing", r)
	}
}
