package pool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
