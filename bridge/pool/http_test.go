package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// requireHeader rejects requests without the header the configuration sets.
func requireHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token" {
			http.Error(w, "missing or wrong Authorization", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestHTTPTransports(t *testing.T) {
	tests := []struct {
		transport discovery.Transport
		handler   func(getServer func(*http.Request) *mcp.Server) http.Handler
	}{
		{discovery.Streamable, func(g func(*http.Request) *mcp.Server) http.Handler { return mcp.NewStreamableHTTPHandler(g, nil) }},
		{discovery.SSE, func(g func(*http.Request) *mcp.Server) http.Handler { return mcp.NewSSEHandler(g, nil) }},
	}
	for _, tt := range tests {
		t.Run(string(tt.transport), func(t *testing.T) {
			var acks progressAcks
			var sessions atomic.Int32 // sessions initialized on the server
			s := newTestServer("http", &mcp.ServerOptions{
				InitializedHandler: func(context.Context, *mcp.InitializedRequest) { sessions.Add(1) },
			}, &acks)
			getServer := func(*http.Request) *mcp.Server { return s }
			srv := httptest.NewServer(requireHeader(tt.handler(getServer)))
			t.Cleanup(srv.Close)
			good := &discovery.Server{Name: "good", Transport: tt.transport, URL: srv.URL,
				Headers: map[string]string{"Authorization": "Bearer test-token"}}
			bad := &discovery.Server{Name: "bad", Source: "/etc/x.json", Transport: tt.transport, URL: srv.URL}
			p := newTestPool(t, Options{})
			p.Update([]*discovery.Server{good, bad})

			// The session must outlive the context it connected with (the
			// SSE client keeps its stream on it): the pool ends that context
			// before Tools returns, and the calls below must still be
			// served by the same session.
			tools, err := p.Tools(t.Context(), "good")
			if err != nil {
				t.Fatal(err)
			}
			if len(tools) != 5 {
				t.Errorf("%d tools, want 5", len(tools))
			}
			res, err := p.Call(t.Context(), "good", "echo", map[string]any{"message": "over http"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "Echo: over http" {
				t.Errorf("got %q", got)
			}

			var mu sync.Mutex
			var progress int
			_, err = p.Call(t.Context(), "good", "sleep", map[string]any{"held": true, "steps": 3}, func(n *mcp.ProgressNotificationParams) {
				mu.Lock()
				progress++
				mu.Unlock()
				acks.ack(n)
			})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if progress != 3 {
				t.Errorf("%d progress notifications, want 3", progress)
			}
			mu.Unlock()
			if n := sessions.Load(); n != 1 {
				t.Errorf("%d sessions were initialized, want 1: the first did not outlive its connect context", n)
			}

			_, err = p.Tools(t.Context(), "bad")
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "Unauthorized") || !strings.Contains(err.Error(), `"headers"`) {
				t.Errorf("without the header: got %v, want a *StartError saying Unauthorized", err)
			}
			t.Log(err)
			if st := statusOf(t, p, "good"); st.State != StateRunning || st.PID != 0 || st.Transport != tt.transport {
				t.Errorf("status = %+v", st)
			}
		})
	}
}

func TestHTTPServerGoneIsRestarted(t *testing.T) {
	getServer := func(*http.Request) *mcp.Server { return newTestServer("http", nil, nil) }
	srv := httptest.NewServer(mcp.NewSSEHandler(getServer, nil))
	t.Cleanup(srv.Close)
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{{Name: "s", Transport: discovery.SSE, URL: srv.URL}})
	if _, err := p.Call(t.Context(), "s", "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections() // ends the event stream, and so the session
	testenv.Eventually(t, "the pool notices", func() bool { return statusOf(t, p, "s").State != StateRunning })
	if _, err := p.Call(t.Context(), "s", "echo", nil, nil); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
}

// TestHTTPHeadersStayWithTheirOrigin: a server that redirects to another
// host (127.0.0.1 to 127.0.0.2) gets no configured header sent there, with
// any redirect status, and the error says why; a redirect within the
// origin is still followed with the headers.
func TestHTTPHeadersStayWithTheirOrigin(t *testing.T) {
	getServer := func(*http.Request) *mcp.Server { return newTestServer("http", nil, nil) }
	var mu sync.Mutex
	var leaked []string
	elsewhere := testenv.ServeOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, h := range []string{"Authorization", "X-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				leaked = append(leaked, r.Method+" "+h+": "+v)
			}
		}
		mu.Unlock()
		mcp.NewStreamableHTTPHandler(getServer, nil).ServeHTTP(w, r)
	}))
	headers := map[string]string{"Authorization": "Bearer test-token", "X-Api-Key": "key-123456"}
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusMovedPermanently, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			mu.Lock()
			leaked = nil
			mu.Unlock()
			home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
			}))
			t.Cleanup(home.Close)
			p := newTestPool(t, Options{})
			p.Update([]*discovery.Server{{Name: "moved", Transport: discovery.Streamable, URL: home.URL + "/mcp", Headers: headers}})
			_, err := p.Tools(t.Context(), "moved")
			mu.Lock()
			defer mu.Unlock()
			if len(leaked) > 0 {
				t.Errorf("the other host got the configured headers: %q", leaked)
			}
			if !errors.Is(err, ErrRedirectOffOrigin) || !strings.Contains(err.Error(), `set its "url"`) {
				t.Errorf("got %v, want an error saying the redirect to another origin was not followed", err)
			}
		})
	}

	t.Run("within the origin", func(t *testing.T) {
		mcpHandler := requireHeader(mcp.NewStreamableHTTPHandler(getServer, nil))
		home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
				return
			}
			mcpHandler.ServeHTTP(w, r)
		}))
		t.Cleanup(home.Close)
		p := newTestPool(t, Options{})
		p.Update([]*discovery.Server{{Name: "same", Transport: discovery.Streamable, URL: home.URL + "/old",
			Headers: map[string]string{"Authorization": "Bearer test-token"}}})
		if _, err := p.Tools(t.Context(), "same"); err != nil {
			t.Fatalf("a redirect within the origin: %v", err)
		}
	})
}

func TestOrigin(t *testing.T) {
	same := [][2]string{
		{"https://mcp.example.com/mcp", "https://MCP.example.com:443/other"},
		{"http://127.0.0.1/x", "http://127.0.0.1:80/y"},
	}
	differ := [][2]string{
		{"https://mcp.example.com/mcp", "http://mcp.example.com/mcp"}, // a downgrade
		{"https://mcp.example.com/mcp", "https://evil.example/mcp"},
		{"https://mcp.example.com/mcp", "https://mcp.example.com.evil.example/mcp"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/"},
		{"http://127.0.0.1/", "http://localhost/"},
		{"https://user@mcp.example.com/", "https://mcp.example.com@evil.example/"},
	}
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, p := range same {
		if a, b := origin(parse(p[0])), origin(parse(p[1])); a != b {
			t.Errorf("origin(%s) = %s, origin(%s) = %s: want one origin", p[0], a, p[1], b)
		}
	}
	for _, p := range differ {
		if a, b := origin(parse(p[0])), origin(parse(p[1])); a == b {
			t.Errorf("%s and %s share origin %s: want two", p[0], p[1], a)
		}
	}
}

// TestHTTPBodyBounded: a server answering a call with a 1 GiB JSON body gets
// it cut at MaxHTTPBody, the call fails naming the limit, and the next call
// works.
func TestHTTPBodyBounded(t *testing.T) {
	getServer := func(*http.Request) *mcp.Server {
		s := newTestServer("http", nil, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "answers 1 GiB"},
			func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
				return text("never"), nil, nil
			})
		return s
	}
	var written atomic.Int64
	srv := httptest.NewServer(testenv.HugeAnswers(mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{JSONResponse: true}), 1<<30, &written))
	t.Cleanup(srv.Close)
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{{Name: "big", Transport: discovery.Streamable, URL: srv.URL}})
	_, err := p.Call(t.Context(), "big", "huge", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "limit on one message") {
		t.Errorf("got %v, want an error naming the limit", err)
	}
	if w := written.Load(); w > 4*MaxHTTPBody {
		t.Errorf("the client took %d MiB of the answer, want it cut near %d MiB", w>>20, MaxHTTPBody>>20)
	}
	res, err := p.Call(t.Context(), "big", "echo", map[string]any{"message": "after"}, nil)
	if err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if got := resultText(t, res); got != "Echo: after" {
		t.Errorf("the next call: got %q", got)
	}
}

// TestListingBounded: a server that lists more than MaxListed tools, or
// pages without end, fails the listing with an error naming the limit.
func TestListingBounded(t *testing.T) {
	many := newTestServer("many", nil, nil)
	for i := range MaxListed {
		many.AddTool(&mcp.Tool{Name: fmt.Sprint("t", i), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	endless := newTestServer("endless", nil, nil)
	endless.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ListToolsRequest); ok {
				r.Params.Cursor = "" // every page is the first, and has a next
			}
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && l != nil {
				l.NextCursor = "again"
			}
			return res, err
		}
	})
	for name, tt := range map[string]struct {
		server *mcp.Server
		want   string
	}{
		"many":    {many, "more than 4096 tools"},
		"endless": {endless, "more than 256 pages"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return tt.server }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
			t.Cleanup(srv.Close)
			p := newTestPool(t, Options{})
			p.Update([]*discovery.Server{{Name: name, Transport: discovery.Streamable, URL: srv.URL}})
			_, err := p.Tools(t.Context(), name)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
