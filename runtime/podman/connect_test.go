package podman

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

func TestConnectUnavailable(t *testing.T) {
	fakePodman := t.TempDir()
	script := "#!/bin/sh\necho 'Error: cannot set up the service: boom' >&2\nexit 125\n"
	if err := os.WriteFile(filepath.Join(fakePodman, "podman"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		uri     string
		wantMsg []string
	}{
		{
			name:    "bogus CONTAINER_HOST, no podman",
			env:     map[string]string{"CONTAINER_HOST": "unix:///nonexistent/podman.sock", "PATH": ""},
			wantMsg: []string{"podman is not installed", "nothing answers at unix:///nonexistent/podman.sock (from CONTAINER_HOST)", "apt-get install podman", "codebridge setup", "#two-commands"},
		},
		{
			name:    "bogus CONTAINER_HOST",
			env:     map[string]string{"CONTAINER_HOST": "unix:///nonexistent/podman.sock", "PATH": fakePodman},
			wantMsg: []string{"podman API not reachable at unix:///nonexistent/podman.sock", "CONTAINER_HOST", "podman system service --time=0", "no such file"},
		},
		{
			name:    "bogus URI",
			env:     map[string]string{"CONTAINER_HOST": "", "PATH": ""},
			uri:     "tcp://127.0.0.1:1",
			wantMsg: []string{"podman API not reachable at tcp://127.0.0.1:1", "configured URI", "podman system service"},
		},
		{
			name:    "unsupported scheme",
			env:     map[string]string{"CONTAINER_HOST": "http://example.invalid", "PATH": ""},
			wantMsg: []string{"not a supported schema"},
		},
		{
			name:    "no podman",
			env:     map[string]string{"CONTAINER_HOST": "", "XDG_RUNTIME_DIR": t.TempDir(), "PATH": ""},
			wantMsg: []string{"podman is not installed", "apt-get install podman", "brew install podman", "codebridge#two-commands"},
		},
		{
			name:    "service fails to start",
			env:     map[string]string{"CONTAINER_HOST": "", "XDG_RUNTIME_DIR": t.TempDir(), "PATH": fakePodman},
			wantMsg: []string{"podman system service exited at start-up", "boom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if tt.uri == "" && os.Getenv("CONTAINER_HOST") == "" {
				if _, err := os.Stat(rootfulSocket); err == nil {
					t.Skipf("%s exists: Connect would use it", rootfulSocket)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := Connect(ctx, Options{URI: tt.uri, StateDir: t.TempDir()})
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("error %v is not ErrUnavailable", err)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// serviceTest skips t unless Connect would start a service here, and
// returns a state directory for it and a context that ends with t.
func serviceTest(t *testing.T) (dir string, ctx context.Context) {
	t.Helper()
	testenv.RequirePodmanBinary(t)
	t.Setenv("CONTAINER_HOST", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	if _, err := os.Stat(rootfulSocket); err == nil {
		t.Skipf("%s exists: Connect would use it", rootfulSocket)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return t.TempDir(), ctx
}

// TestConnectSharesService: Connect starts a Podman service when no socket
// answers; a second client configured alike joins it instead of starting
// another; the service outlives its clients' Close and exits by itself once
// idle, removing its socket.
func TestConnectSharesService(t *testing.T) {
	dir, ctx := serviceTest(t)
	t0 := time.Now()
	c, err := Connect(ctx, Options{StateDir: dir, Logger: testenv.Logger(), idle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Connect with a new service took %v", time.Since(t0))
	if c.svc == nil || c.svc.child == nil {
		c.Close()
		t.Fatal("no service started")
	}
	ch := c.svc.child
	t.Cleanup(func() { ch.cmd.Process.Kill() })
	if !strings.HasPrefix(c.URI(), "unix://"+dir+"/podman-") {
		t.Errorf("URI %s, want a socket in %s", c.URI(), dir)
	}
	c2, err := Connect(ctx, Options{StateDir: dir, Logger: testenv.Logger(), idle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c2.svc == nil || c2.svc.child != nil || c2.URI() != c.URI() {
		t.Errorf("second client: URI %s, started a service: %v; want it to join %s", c2.URI(), c2.svc != nil && c2.svc.child != nil, c.URI())
	}
	if _, err := c2.List(ctx); err != nil {
		t.Errorf("List: %v", err)
	}
	c.Close()
	if _, err := c2.List(ctx); err != nil {
		t.Errorf("List after the starter's Close: %v", err)
	}
	c2.Close()
	select {
	case <-ch.exited:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the service did not exit a minute after its last client closed")
	}
	if _, err := os.Stat(c.svc.sock); !os.IsNotExist(err) {
		t.Errorf("socket still exists after the service exited: %v", err)
	}
}

// TestConnectStartsOneService: clients connecting at once start one service.
func TestConnectStartsOneService(t *testing.T) {
	dir, ctx := serviceTest(t)
	clients := make([]*Client, 4)
	var g errgroup.Group
	for i := range clients {
		g.Go(func() (err error) {
			clients[i], err = Connect(ctx, Options{StateDir: dir, Logger: testenv.Logger(), idle: time.Second})
			return err
		})
	}
	err := g.Wait()
	started := 0
	for _, c := range clients {
		if c == nil {
			continue
		}
		if c.svc.child != nil {
			started++
			t.Cleanup(func() { c.svc.child.cmd.Process.Kill() })
		}
		defer c.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 {
		t.Errorf("%d clients started a service; want 1", started)
	}
}

// TestResolveImage resolves the image against Podman as an [Engine] does.
func TestResolveImage(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	if img == confine.DefaultImage {
		got, err := confine.ResolveImage(t.Context(), c, imagePolicy(""), nil, slog.New(slog.DiscardHandler))
		if err != nil || got != confine.DefaultImage {
			t.Errorf("ResolveImage(\"\") = %q, %v; want %s", got, err, confine.DefaultImage)
		}
	}
	got, err := confine.ResolveImage(t.Context(), c, imagePolicy(img), nil, slog.New(slog.DiscardHandler))
	if err != nil || got != img {
		t.Errorf("ResolveImage(%q) = %q, %v", img, got, err)
	}
	// localhost has no registry: the pull fails fast, on loopback only.
	_, err = confine.ResolveImage(t.Context(), c, imagePolicy("localhost/codebridge-no-such-image:1"), nil, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "codebridge#two-commands") {
		t.Errorf("ResolveImage(missing) = %v; want ErrUnavailable naming the README's set-up", err)
	}
}

// TestConnectRuntime: a Podman the user names must run the runtime asked
// for (Podman runs every container of a service under the service's), and
// one that does not is refused with what to do; a service codebridge starts
// gets the runtime on its command line.
func TestConnectRuntime(t *testing.T) {
	shared := testClient(t) // a service under testenv.Runtime(), or Podman's default
	other := "runsc"
	if confine.GVisor(testenv.Runtime()) {
		other = "runc"
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := Connect(ctx, Options{URI: shared.URI(), Runtime: other})
	for _, w := range []string{"not " + other + " (MCP_BRIDGE_RUNTIME)", "from the configured URI", "podman --runtime " + other + " system service --time=0 " + shared.URI()} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Connect to a Podman under another runtime: %v; want it refused, saying %q", err, w)
		}
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v is not ErrUnavailable", err)
	}
	if rt := testenv.Runtime(); rt != "" {
		c, err := Connect(ctx, Options{URI: shared.URI(), Runtime: rt})
		if err != nil {
			t.Fatalf("Connect to a Podman under %s, asking for it: %v", rt, err)
		}
		if c.Runtime() != rt {
			t.Errorf("Runtime() = %q, want %q", c.Runtime(), rt)
		}
		c.Close()
	}

	// A runtime Podman does not know: the service exits at once.
	fake := t.TempDir()
	args := filepath.Join(fake, "args")
	script := "#!/bin/sh\necho \"$@\" > " + args + "\necho 'Error: default OCI runtime \"nosuch\" not found: invalid argument' >&2\nexit 125\n"
	if err := os.WriteFile(filepath.Join(fake, "podman"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONTAINER_HOST", "")
	t.Setenv("CONTAINER_CONNECTION", "")
	t.Setenv("PATH", fake)
	_, err = Connect(ctx, Options{StateDir: t.TempDir(), Runtime: "nosuch"})
	for _, w := range []string{`default OCI runtime "nosuch" not found`, "podman --runtime nosuch system service", "codebridge setup --runtime nosuch"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Connect with an unknown runtime: %v; want it to say %q", err, w)
		}
	}
	if got, _ := os.ReadFile(args); !strings.HasPrefix(string(got), "--runtime nosuch system service --time=") {
		t.Errorf("podman ran with %q, want --runtime nosuch system service ...", got)
	}
}
