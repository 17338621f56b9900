package front

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// echoRunner prints the sandbox session key each run would use.
type echoRunner struct{}

func (echoRunner) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	return &sandbox.Result{Result: &python.Result{Stdout: req.Session + "\n"}, Session: sandbox.SessionInfo{ID: "i", Handle: "h", Run: 1, New: true}}, nil
}
func (echoRunner) End(context.Context, string)    {}
func (echoRunner) Detach(context.Context, string) {}

// serveFront serves f's /mcp handler on a loopback test server.
func serveFront(t *testing.T, maxSessions int) (*Front, string) {
	t.Helper()
	cfg := bridgetest.Config(t)
	cfg.MaxMCPSessions = maxSessions
	f := &Front{srv: testServer(cfg, server.Options{Runner: echoRunner{}}), opts: testOptions(cfg), logger: slog.New(slog.DiscardHandler), tracked: map[string]*tracked{}}
	ts := httptest.NewServer(f.mcpHandler())
	t.Cleanup(ts.Close)
	return f, ts.URL
}

func dial(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func runOutput(t *testing.T, cs *mcp.ClientSession) (string, error) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: server.ToolName, Arguments: map[string]any{"code": "1"}})
	if err != nil {
		return "", err
	}
	return res.Content[len(res.Content)-1].(*mcp.TextContent).Text, nil
}

// postsDone waits until f has no POST in progress: a POST's handler may
// still be returning after its client has the answer, and a session with a
// POST in progress is not closed.
func postsDone(t *testing.T, f *Front) {
	t.Helper()
	testenv.Eventually(t, "the server to finish the requests", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, tr := range f.tracked {
			if tr.posts > 0 {
				return false
			}
		}
		return true
	})
}

// TestMCPSessionCapClosesIdlest: at MaxMCPSessions a new client closes the
// MCP session used least recently instead of being refused.
func TestMCPSessionCapClosesIdlest(t *testing.T) {
	f, url := serveFront(t, 2)
	a, b := dial(t, url, "2025-11-25"), dial(t, url, "2025-11-25")
	runOutput(t, a)
	runOutput(t, b) // a is now the idlest
	postsDone(t, f)
	c := dial(t, url, "2025-11-25")
	if _, err := runOutput(t, c); err != nil {
		t.Fatalf("the third client: %v", err)
	}
	if _, err := a.ListTools(t.Context(), nil); err == nil {
		t.Error("the idlest MCP session was not closed")
	}
	if _, err := b.ListTools(t.Context(), nil); err != nil {
		t.Errorf("the session used more recently: %v", err)
	}
	if n := f.sessions(); n != 2 {
		t.Errorf("%d MCP sessions open, want 2", n)
	}
}

// TestSessionlessRequests: a client of MCP 2026-07-28 is served without an
// MCP session, each call in a session of its own that only its handle
// reaches; an older client keeps its MCP session's.
func TestSessionlessRequests(t *testing.T) {
	f, url := serveFront(t, 1)
	old := dial(t, url, "2025-11-25")
	out1, _ := runOutput(t, old)
	out2, _ := runOutput(t, old)
	if !strings.HasPrefix(out1, "mcp-") || out1 != out2 {
		t.Errorf("an MCP session's calls ran in %q and %q, want its own session twice", out1, out2)
	}
	cs := dial(t, url, "")
	if cs.ID() != "" {
		t.Fatalf("a 2026-07-28 client got MCP session %q", cs.ID())
	}
	out, err := runOutput(t, cs)
	if err != nil || !strings.Contains(out, "\nhandle-") || !strings.Contains(out, `pass "session"`) {
		t.Errorf("a sessionless call: %q %v, want a session of its own reached by handle", out, err)
	}
	if n := f.sessions(); n != 1 {
		t.Errorf("%d MCP sessions open, want the older client's only (MaxMCPSessions 1 was not hit)", n)
	}
	if _, err := old.ListTools(t.Context(), nil); err != nil {
		t.Errorf("the older client's session: %v", err)
	}
}

// TestRetryField: an event stream starts with the retry field; other
// answers are left alone.
func TestRetryField(t *testing.T) {
	for _, tt := range []struct {
		name, contentType string
		code              int
		want              string
	}{
		{"event stream", "text/event-stream", 200, "retry: 1000\n\nevent: message\n"},
		{"json", "application/json", 200, "event: message\n"},
		{"error", "text/event-stream", 404, "event: message\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := announceRetry(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.code)
				io.WriteString(w, "event: message\n")
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
			if rec.Body.String() != tt.want {
				t.Errorf("body %q, want %q", rec.Body, tt.want)
			}
		})
	}
}

// TestTokenIdentity: the token's holder is named by a hash of the token's
// hash, neither the token nor what codebridge compares it with; a wrong
// token names nobody.
func TestTokenIdentity(t *testing.T) {
	const token = "0123456789abcdef0123"
	f := &Front{token: tokenDigest(token)}
	info, err := f.verify(t.Context(), token, nil)
	d := tokenDigest(token)
	if err != nil || info.UserID == "" || strings.Contains(info.UserID, token) || strings.Contains(hex.EncodeToString(d[:]), info.UserID) {
		t.Errorf("identity %+v, %v: want a hash that is neither the token nor its digest", info, err)
	}
	if again, _ := f.verify(t.Context(), token, nil); again.UserID != info.UserID {
		t.Error("the same token named two identities")
	}
	if _, err := f.verify(t.Context(), token+"x", nil); err == nil {
		t.Error("a wrong token was verified")
	}
}
