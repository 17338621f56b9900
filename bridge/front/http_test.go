package front

import (
	"context"
	"errors"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/server"
)

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "LocalHost:1": true, "[::1]:8080": true, "127.1.2.3:80": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.2:8080": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := isLoopbackAddr(addr); got != want {
			t.Errorf("isLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	t.Run("setting", func(t *testing.T) {
		tok, path, err := bearerToken(Options{Token: secret.New("0123456789abcdef"), StateDir: t.TempDir()})
		if err != nil || tok != "0123456789abcdef" || path != "" {
			t.Errorf("got %q %q %v", tok, path, err)
		}
		for _, weak := range []string{"short", "0123456789 abcdef"} {
			if _, _, err := bearerToken(Options{Token: secret.New(weak)}); err == nil || !strings.Contains(err.Error(), "openssl rand") || strings.Contains(err.Error(), weak) {
				t.Errorf("token %q: %v, want a refusal that does not repeat it", weak, err)
			}
		}
	})
	t.Run("generated and kept", func(t *testing.T) {
		cfg := Options{StateDir: filepath.Join(t.TempDir(), "state")}
		tok, path, err := bearerToken(cfg)
		if err != nil || len(tok) < 32 || path != filepath.Join(cfg.StateDir, tokenFile) {
			t.Fatalf("got %q %q %v", tok, path, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file: %v %v, want mode 0600", fi.Mode(), err)
		}
		again, _, err := bearerToken(cfg)
		if err != nil || again != tok {
			t.Errorf("second start: %q %v, want the kept token", again, err)
		}
		os.Chmod(path, 0o644)
		if _, _, err := bearerToken(cfg); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("token file readable by others: %v, want a refusal saying what to do", err)
		}
	})
}

func TestListenRefusesOpenNetworkAddress(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.HTTP, cfg.HTTPAuth = "0.0.0.0:0", false
	f, err := Listen(testOptions(cfg))
	if err == nil {
		f.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "MCP_BRIDGE_HTTP_AUTH") {
		t.Errorf("got %v, want a refusal naming loopback and MCP_BRIDGE_HTTP_AUTH", err)
	}
}

// TestFrontChecks: the Host, Origin and token checks in front of /mcp, each
// refusal before the handler behind runs.
func TestFrontChecks(t *testing.T) {
	const token = "0123456789abcdef0123"
	cfg := bridgetest.Config(t)
	cfg.HTTPOrigins = []string{"https://agent.example.com"}
	f := &Front{opts: testOptions(cfg), loopback: true, port: "8080", token: tokenDigest(token)}
	reached := false
	h := f.checkHost(f.checkOrigin(f.authenticate(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))))
	tests := []struct {
		name, host, origin, auth string
		want                     int
	}{
		{"ok", "127.0.0.1:8080", "", "Bearer " + token, 200},
		{"localhost and a loopback origin", "localhost:8080", "http://localhost:6274", "Bearer " + token, 200},
		{"ipv6 loopback", "[::1]:8080", "", "Bearer " + token, 200},
		{"listed origin", "127.0.0.1:8080", "https://agent.example.com", "Bearer " + token, 200},
		{"no token", "127.0.0.1:8080", "", "", 401},
		{"wrong token", "127.0.0.1:8080", "", "Bearer " + token + "x", 401},
		{"lower-case scheme", "127.0.0.1:8080", "", "bearer " + token, 401},
		{"rebound host", "evil.example:8080", "", "Bearer " + token, 403},
		{"host without port", "127.0.0.1", "", "Bearer " + token, 403},
		{"other port", "127.0.0.1:9090", "", "Bearer " + token, 403},
		{"foreign origin", "127.0.0.1:8080", "https://evil.example", "Bearer " + token, 403},
		{"origin null", "127.0.0.1:8080", "null", "Bearer " + token, 403},
		{"listed origin on another port", "127.0.0.1:8080", "https://agent.example.com:444", "Bearer " + token, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached = false
			req := httptest.NewRequest("POST", "/mcp", nil)
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.want || reached != (tt.want == 200) {
				t.Errorf("status %d (handler reached: %v), want %d: %s", w.Code, reached, tt.want, w.Body)
			}
			if tt.want == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// TestHealthReady: the health endpoint reports whether the sandbox answers
// through Health.Ready, and leaves the check out without one.
func TestHealthReady(t *testing.T) {
	cfg := bridgetest.Config(t)
	for _, tt := range []struct {
		name  string
		ready func(context.Context) error
		want  string
	}{
		{"answers", func(context.Context) error { return nil }, `"engine":"docker","engine_status":"ok"`},
		{"does not answer", func(context.Context) error { return errors.New("podman API not reachable") }, `"engine":"docker","engine_status":"unreachable"`},
		{"no check", nil, `"engine":"docker","engine_status":"ok"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &Front{srv: testServer(cfg, server.Options{}), health: Health{Ready: tt.ready, Engine: "docker"}, opts: testOptions(cfg), logger: slog.New(slog.DiscardHandler)}
			rec := httptest.NewRecorder()
			f.healthz(rec, httptest.NewRequest(http.MethodGet, HealthPath, nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("health = %d %s, want 200 with %s", rec.Code, rec.Body, tt.want)
			}
		})
	}
}

// TestBearerTokenReplicasAtOnce: replicas that start at the same moment on
// one state directory generate one token between them, and none reads a
// token file half-written.
func TestBearerTokenReplicasAtOnce(t *testing.T) {
	for range 200 {
		cfg := Options{StateDir: filepath.Join(t.TempDir(), "state")}
		toks := make([]string, 6)
		errs := make([]error, len(toks))
		var wg sync.WaitGroup
		for i := range toks {
			wg.Go(func() { toks[i], _, errs[i] = bearerToken(cfg) })
		}
		wg.Wait()
		for i := range toks {
			if errs[i] != nil || toks[i] != toks[0] {
				t.Fatalf("replica %d: %v (token same as the first's: %v)", i, errs[i], toks[i] == toks[0])
			}
		}
	}
}

// TestHealthProbesEngineOncePerSecond: /healthz needs no token, so requests
// to it must not each make a round trip to the container engine. Requests at
// once share one probe, and its answer serves for a second.
func TestHealthProbesEngineOncePerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := bridgetest.Config(t)
		var probes atomic.Int32
		release := make(chan struct{})
		ready := func(context.Context) error {
			probes.Add(1)
			<-release
			return nil
		}
		f := &Front{srv: testServer(cfg, server.Options{}), health: Health{Ready: ready, Engine: "docker"}, opts: testOptions(cfg), logger: slog.New(slog.DiscardHandler)}
		get := func() string {
			rec := httptest.NewRecorder()
			f.healthz(rec, httptest.NewRequest(http.MethodGet, HealthPath, nil))
			return rec.Body.String()
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { get() })
		}
		synctest.Wait() // every request has asked, and the probe is under way
		close(release)
		wg.Wait()
		for range 20 {
			if body := get(); !strings.Contains(body, `"engine_status":"ok"`) {
				t.Fatalf("health = %s, want engine_status ok", body)
			}
		}
		if n := probes.Load(); n != 1 {
			t.Errorf("40 health requests within a second probed the engine %d times, want 1", n)
		}
		time.Sleep(1100 * time.Millisecond)
		get()
		if n := probes.Load(); n != 2 {
			t.Errorf("a health request after the cached status expired: %d probes in all, want 2", n)
		}
	})
}
