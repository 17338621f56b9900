package bridge

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestMetricsBehindToken: serve --http serves /metrics behind its bearer
// token: 401 without it or with another, the metrics with it, the state
// read from the App's parts.
func TestMetricsBehindToken(t *testing.T) {
	const token = "metrics-test-token-0123456789"
	cfg := bridgetest.Config(t)
	// A free port: the front does not say which one it bound.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg.ConfigDir, cfg.WarmSandboxes, cfg.HTTP, cfg.HTTPAuth = t.TempDir(), 0, addr, true
	cfg.HTTPToken = secret.New(token)
	a := newApp(t.Context(), cfg, &fakeEngine{warming: make(chan struct{})}, slog.New(slog.DiscardHandler), "test", nil)
	f, err := front.Listen(FrontOptions(cfg, nil, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.ServeHTTP(f) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	testenv.Eventually(t, "ServeHTTP to take the front", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.front != nil
	})

	get := func(auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+MetricsPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, auth := range []string{"", "Bearer not-the-token-0123456789"} {
		if code, body := get(auth); code != http.StatusUnauthorized || strings.Contains(body, "codebridge_") {
			t.Errorf("GET /metrics with Authorization %q = %d %q, want 401 and no metrics", auth, code, body)
		}
	}
	code, body := get("Bearer " + token)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics with the token = %d %q, want 200", code, body)
	}
	for _, want := range []string{
		"codebridge_run_queue_depth 0\n",
		"codebridge_sandbox_sessions 0\n",
		"codebridge_sandbox_warm_containers 0\n",
		`codebridge_downstream_servers{state="running"} 0` + "\n",
		`codebridge_sandbox_starts_total{outcome="ok"} 0` + "\n",
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q; it is:\n%s", want, body)
		}
	}
}
