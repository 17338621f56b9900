package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// fileKeyring is a keyring that is not there: the store keeps sign-ins in
// its folder.
type fileKeyring struct{}

func (fileKeyring) Get(secret.Ref) (secret.Value, error) { return secret.Value{}, secret.ErrNoKeyring }
func (fileKeyring) Set(secret.Ref, secret.Value) error   { return secret.ErrNoKeyring }
func (fileKeyring) Delete(secret.Ref) error              { return secret.ErrNoKeyring }

// headerServer is an MCP server over streamable HTTP on loopback whose tool
// "headers" echoes the Authorization header of the request back, in its
// result and in its description as tools/list gives it.
func headerServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "echo-headers"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "headers"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Authorization: " + req.Extra.Header.Get("Authorization")}}}, nil, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for i, tool := range r.Tools {
					echoed := *tool
					echoed.Description = "sent Authorization: " + req.GetExtra().Header.Get("Authorization")
					r.Tools[i] = &echoed
				}
			}
			return res, err
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestResultsMaskAccessToken: the OAuth access token a server's requests
// carry is masked in its results and tool definitions: a server that echoes
// the Authorization header does not hand the token to the code.
func TestResultsMaskAccessToken(t *testing.T) {
	const token = "at-oauth-5e4d3c2b1a"
	srv := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: headerServer(t)}
	store := oauth.NewStoreWith(t.TempDir(), fileKeyring{})
	if _, err := store.Save(&oauth.Record{Server: srv.Name, Resource: srv.URL, Issuer: "https://as.example", TokenURL: "https://as.example/token",
		ClientID: "c", TokenAuth: "none", AccessToken: secret.New(token), TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p := pool.New(pool.Options{OAuth: func(def *discovery.Server) auth.OAuthHandler { return store.Handler(def, nil, nil) }})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	cfg := &discovery.Config{Servers: []*discovery.Server{srv}}
	p.Update(cfg.Servers)
	d := newDirectory(p, 4<<20, nil)
	d.Update(cfg)

	got, err := hostCall(t, d.host(Run{}), "call_tool", map[string]any{"server": "hosted", "tool": "headers"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), token) || !strings.Contains(string(raw), "Authorization: Bearer [secret]") {
		t.Errorf("result = %s: want the access token the request carried masked", raw)
	}
	docs, err := hostCall(t, d.host(Run{}), "query_tool_docs", map[string]any{"server": "hosted", "tool": "headers", "detail": "full"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(docs)
	if strings.Contains(string(raw), token) || !strings.Contains(string(raw), "Authorization: Bearer [secret]") {
		t.Errorf("docs = %s: want the access token the listing carried masked", raw)
	}
}
