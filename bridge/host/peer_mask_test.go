package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// agentSeen is what an agent's client received from codebridge.
type agentSeen struct {
	elicit chan *mcp.ElicitParams
	sample chan *mcp.CreateMessageParams
	logs   chan *mcp.LoggingMessageParams
}

// connectAgent connects an agent's client that declares elicitation (both
// modes) and sampling, and takes every log message, to a codebridge server
// session, and returns the session for the run.
func connectAgent(t *testing.T) (*elicit.Session, *agentSeen) {
	t.Helper()
	a := &agentSeen{elicit: make(chan *mcp.ElicitParams, 4), sample: make(chan *mcp.CreateMessageParams, 4), logs: make(chan *mcp.LoggingMessageParams, 4)}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			Sampling:    &mcp.SamplingCapabilities{},
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.elicit <- req.Params
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.sample <- req.Params
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { a.logs <- req.Params },
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "codebridge"},
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
	t.Cleanup(func() { cs.Close(); ss.Close() })
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return elicit.ForClient(ss), a
}

// TestPeerMasksSecrets: what a server asks of the agent's client (a log
// message, a sampling request, an elicitation's message, schema and URL)
// reaches it with the server's secrets masked, still well formed; a secret
// under secret.MinMasked bytes is left.
func TestPeerMasksSecrets(t *testing.T) {
	const token, short = "tok-9f8e7d6c5b4a", "abc"
	ask, a := connectAgent(t)
	h := &host{ask: ask}
	srv := &discovery.Server{Name: "leaky", Secrets: secret.List{secret.New(token), secret.New(short)}}
	p := h.peer(srv)
	leaks := func(what string, v any) {
		t.Helper()
		raw, _ := json.Marshal(v)
		if strings.Contains(string(raw), token) {
			t.Errorf("%s reached the agent's client with the token: %s", what, raw)
		}
		if !strings.Contains(string(raw), "[secret]") {
			t.Errorf("%s has no [secret] where the token was: %s", what, raw)
		}
	}

	if err := p.Log(t.Context(), &mcp.LoggingMessageParams{Level: "error", Logger: "db-" + token,
		Data: map[string]any{"msg": "connected with " + token, "short": short}}); err != nil {
		t.Fatal(err)
	}
	got := <-a.logs
	leaks("a log message", got)
	if got.Level != "error" || !strings.HasPrefix(got.Logger, "leaky/") || got.Data.(map[string]any)["short"] != short {
		t.Errorf("log message %+v: want the level, the server's name and the short value kept", got)
	}

	if _, err := p.CreateMessage(t.Context(), &mcp.CreateMessageParams{SystemPrompt: "key " + token, MaxTokens: 5,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "use " + token}}}}); err != nil {
		t.Fatal(err)
	}
	sample := <-a.sample
	leaks("a sampling request", sample)
	if len(sample.Messages) != 1 || sample.Messages[0].Content.(*mcp.TextContent).Text != "use [secret]" || sample.MaxTokens != 5 {
		t.Errorf("sampling request %+v: want its message masked and the rest kept", sample)
	}

	schema := map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{
		"type": "string", "title": "Key " + token, "description": "was " + token, "default": token,
	}, "pick": map[string]any{"type": "string", "enum": []any{"a", token}, "enumNames": []any{"A", "is " + token}}}}
	if _, err := p.Elicit(t.Context(), &mcp.ElicitParams{Message: "confirm " + token, RequestedSchema: schema}); err != nil {
		t.Fatal(err)
	}
	leaks("a form question", <-a.elicit)
	if _, err := p.Elicit(t.Context(), &mcp.ElicitParams{Mode: "url", URL: "https://example.com/?t=" + token, ElicitationID: "e1", Message: "open"}); err != nil {
		t.Fatal(err)
	}
	q := <-a.elicit
	leaks("a URL question", q)
	if q.URL != "https://example.com/?t=[secret]" || q.ElicitationID != "e1" {
		t.Errorf("URL question %+v: want its URL masked and its id kept", q)
	}
}
