package pool

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	getServer := func(*http.Request) *mcp.Server { return newTestServer("http", nil, nil) }
	tests := []struct {
		transport discovery.Transport
		handler   http.Handler
	}{
		{discovery.Streamable, mcp.NewStreamableHTTPHandler(getServer, nil)},
		{discovery.SSE, mcp.NewSSEHandler(getServer, nil)},
	}
	for _, tt := range tests {
		t.Run(string(tt.transport), func(t *testing.T) {
			srv := httptest.NewServer(requireHeader(tt.handler))
			t.Cleanup(srv.Close)
			good := &discovery.Server{Name: "good", Transport: tt.transport, URL: srv.URL,
				Headers: map[string]string{"Authorization": "Bearer test-token"}}
			bad := &discovery.Server{Name: "bad", Source: "/etc/x.json", Transport: tt.transport, URL: srv.URL}
			// A short ConnectTimeout: the session must outlive it (the SSE
			// client keeps its stream on the context it connects with).
			p := newTestPool(t, Options{ConnectTimeout: 300 * time.Millisecond})
			p.Update([]*discovery.Server{good, bad})

			tools, err := p.Tools(t.Context(), "good")
			if err != nil {
				t.Fatal(err)
			}
			if len(tools) != 5 {
				t.Errorf("%d tools, want 5", len(tools))
			}
			time.Sleep(400 * time.Millisecond)
			res, err := p.Call(t.Context(), "good", "echo", map[string]any{"message": "over http"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "Echo: over http" {
				t.Errorf("got %q", got)
			}

			var mu sync.Mutex
			var progress int
			_, err = p.Call(t.Context(), "good", "sleep", map[string]any{"ms": 100, "steps": 3}, func(*mcp.ProgressNotificationParams) {
				mu.Lock()
				progress++
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if progress < 2 {
				t.Errorf("%d progress notifications, want 3 (or 2)", progress)
			}
			mu.Unlock()

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
	eventually(t, "the pool notices", func() bool { return statusOf(t, p, "s").State != StateRunning })
	if _, err := p.Call(t.Context(), "s", "echo", nil, nil); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
}
