package elicit

import (
	"context"
	"errors"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentClient is what an agent's client saw: the requests its handlers
// were given and the log messages it received.
type agentClient struct {
	elicit  []*mcp.ElicitParams
	sample  []*mcp.CreateMessageParams
	roots   int
	logs    chan *mcp.LoggingMessageParams
	session *mcp.ClientSession
}

// connectAgent connects an agent's client, with handlers when declare is
// set, to a server and returns the server's side of the session.
func connectAgent(t *testing.T, declare bool) (*mcp.ServerSession, *agentClient) {
	t.Helper()
	a := &agentClient{logs: make(chan *mcp.LoggingMessageParams, 10)}
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			a.logs <- req.Params
		},
	}
	if declare {
		opts.Capabilities.RootsV2 = &mcp.RootCapabilities{}
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.elicit = append(a.elicit, req.Params)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.sample = append(a.sample, req.Params)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "42"}}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, opts)
	client.AddRoots(&mcp.Root{URI: "file:///project"})
	// MCP 2025-11-25, in which a server sends its own requests.
	server := mcp.NewServer(&mcp.Implementation{Name: "codebridge", Version: "test"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}, SupportedProtocolVersions: []string{"2025-11-25"}})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.session = cs
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss, a
}

// TestPassthrough: what a downstream server asks reaches a client that
// declared it, naming the server, and the answer comes back unchanged.
func TestPassthrough(t *testing.T) {
	ss, a := connectAgent(t, true)
	s := ForClient(ss)
	if got := s.Undeclared(); len(got) != 0 {
		t.Errorf("Undeclared = %q, want none", got)
	}

	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	res, err := s.Forward(t.Context(), "everything", &mcp.ElicitParams{Message: "Your name?", RequestedSchema: schema})
	if err != nil || res.Action != "accept" || res.Content["name"] != "Ada" {
		t.Fatalf("Forward = %+v, %v; want Ada's answer", res, err)
	}
	if got, want := a.elicit[0].Message, `[MCP server "everything", called by the agent's code] Your name?`; got != want {
		t.Errorf("the client was asked %q, want %q", got, want)
	}

	// URL mode: the link goes to the client as the server gave it.
	res, err = s.Forward(t.Context(), "tracker", &mcp.ElicitParams{Mode: "url", URL: "https://example.com/sign-in", ElicitationID: "e1", Message: "Sign in"})
	if err != nil || res.Action != "accept" {
		t.Fatalf("Forward(url) = %+v, %v; want accept", res, err)
	}
	if got := a.elicit[1]; got.Mode != "url" || got.URL != "https://example.com/sign-in" || got.ElicitationID != "e1" || got.Message != `[MCP server "tracker", called by the agent's code] Sign in` {
		t.Errorf("the client was asked %+v, want the URL question naming tracker", got)
	}

	msg, err := s.CreateMessage(t.Context(), "everything", &mcp.CreateMessageParams{SystemPrompt: "Be brief.", MaxTokens: 5,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "?"}}}})
	if err != nil || msg.Content.(*mcp.TextContent).Text != "42" {
		t.Fatalf("CreateMessage = %+v, %v; want 42", msg, err)
	}
	if diff := cmp.Diff("[This request comes from MCP server \"everything\", called by the agent's code through codebridge.]\nBe brief.", a.sample[0].SystemPrompt); diff != "" {
		t.Errorf("system prompt (-want +got):\n%s", diff)
	}
	if got := a.sample[0].Meta[SamplingMetaKey]; got != "everything" {
		t.Errorf("_meta[%s] = %v, want everything", SamplingMetaKey, got)
	}

	roots, err := s.ListRoots(t.Context())
	if err != nil || len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///project" {
		t.Fatalf("ListRoots = %+v, %v; want the client's root", roots, err)
	}

	// A log message reaches the client at the level it set, named after the server.
	if err := a.session.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	for _, level := range []mcp.LoggingLevel{"info", "error"} {
		if err := s.Log(t.Context(), "everything", &mcp.LoggingMessageParams{Level: level, Logger: "db", Data: string(level)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-a.logs; got.Logger != "everything/db" || got.Data != "error" {
		t.Errorf("the client got log message %+v, want the error from everything/db only", got)
	}
}

// TestPassthroughUndeclared: a client that declared nothing is asked
// nothing; the server gets an error naming the capability.
func TestPassthroughUndeclared(t *testing.T) {
	ss, a := connectAgent(t, false)
	s := ForClient(ss)
	if diff := cmp.Diff([]string{"MCP elicitation", "sampling", "roots"}, s.Undeclared()); diff != "" {
		t.Errorf("Undeclared (-want +got):\n%s", diff)
	}
	_, err := s.Forward(t.Context(), "everything", &mcp.ElicitParams{Message: "?"})
	if !errors.Is(err, ErrNotDeclared) {
		t.Errorf("Forward: %v, want ErrNotDeclared", err)
	}
	_, err = s.CreateMessage(t.Context(), "everything", &mcp.CreateMessageParams{})
	if !errors.Is(err, ErrNotDeclared) {
		t.Errorf("CreateMessage: %v, want ErrNotDeclared", err)
	}
	if _, err = s.ListRoots(t.Context()); !errors.Is(err, ErrNotDeclared) {
		t.Errorf("ListRoots: %v, want ErrNotDeclared", err)
	}
	if len(a.elicit)+len(a.sample) != 0 {
		t.Errorf("the client was asked: %v %v", a.elicit, a.sample)
	}
}

// TestOpenURL: a client that declared URL-mode elicitation is asked to
// open a URL, naming the server, with an id that the completion
// notification carries back; a client with form mode only, or speaking a
// protocol in which a server may not ask during a call, cannot be asked.
func TestOpenURL(t *testing.T) {
	asked := make(chan *mcp.ElicitParams, 1)
	completed := make(chan string, 1)
	connectURL := func(version string, caps *mcp.ElicitationCapabilities) *Session {
		ss := bridgetest.Agent(t, version, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: caps},
			ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- r.Params
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
			ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
				completed <- r.Params.ElicitationID
			},
		})
		return ForClient(ss)
	}

	s := connectURL("2025-11-25", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}})
	if !s.CanOpenURL() {
		t.Fatal("a client that declared URL mode cannot be asked to open a URL")
	}
	action, id, err := s.OpenURL(t.Context(), "tracker", "https://auth.example/authorize?state=x", "Sign in.")
	if err != nil || action != "accept" || id == "" {
		t.Fatalf("OpenURL = %q, %q, %v; want accept and an id", action, id, err)
	}
	got := <-asked
	if got.Mode != "url" || got.URL != "https://auth.example/authorize?state=x" || got.ElicitationID != id ||
		got.Message != `[MCP server "tracker", called by the agent's code] Sign in.` {
		t.Errorf("the client was asked %+v", got)
	}
	if err := s.Completed(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if done := <-completed; done != id {
		t.Errorf("notifications/elicitation/complete named %q, want %q", done, id)
	}

	for _, tt := range []struct {
		version string
		caps    *mcp.ElicitationCapabilities
	}{
		{"2025-11-25", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		{"2026-07-28", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	} {
		s := connectURL(tt.version, tt.caps)
		if _, _, err := s.OpenURL(t.Context(), "tracker", "https://x", "?"); s.CanOpenURL() || !errors.Is(err, ErrNotDeclared) {
			t.Errorf("%s, URL mode %v: CanOpenURL %v, OpenURL error %v; want ErrNotDeclared", tt.version, tt.caps.URL != nil, s.CanOpenURL(), err)
		}
	}
	if len(asked) != 0 {
		t.Errorf("a client that cannot open URLs was asked %+v", <-asked)
	}

	// A client speaking MCP 2026-07-28 is asked through the run's call and
	// told through the session that the interaction is over.
	var viaAsked *mcp.ElicitParams
	s = connectURL("2026-07-28", &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}).Via(viaCall{
		answer: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			viaAsked = r.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	action, id, err = s.OpenURL(t.Context(), "tracker", "https://x", "?")
	if err != nil || action != "accept" || viaAsked == nil || viaAsked.Mode != "url" || viaAsked.ElicitationID != id {
		t.Fatalf("2026-07-28: OpenURL = %q, %v; asked through the call %+v", action, err, viaAsked)
	}
	if err := s.Completed(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if done := <-completed; done != id {
		t.Errorf("2026-07-28: notifications/elicitation/complete named %q, want %q", done, id)
	}
}
