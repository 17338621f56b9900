package podman

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginetest"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

var shared struct {
	once sync.Once
	c    *Client
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	enginetest.Child(func(spec confine.Spec, dir string) enginetest.Start {
		e := NewEngine(EngineOptions{Image: spec.Image, StateDir: dir, Spec: spec})
		return func(ctx context.Context) (sandbox.Container, error) { return e.Start(ctx, sandbox.Wait{}) }
	})
	code := m.Run()
	if shared.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if n, err := removeOwned(ctx, shared.c); err != nil || n > 0 {
			fmt.Fprintf(os.Stderr, "podman tests left %d containers behind (now removed), err %v\n", n, err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
		shared.c.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// testClient returns a client shared by the package's tests, connected
// through Connect (which starts a private Podman service here), or skips t
// (fails it in CI) when Podman is missing.
func testClient(t testing.TB) *Client {
	t.Helper()
	testenv.RequirePodmanBinary(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "cbpodman")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.c, shared.err = Connect(ctx, Options{StateDir: dir, Runtime: testenv.Runtime(), Logger: testenv.Logger()})
	})
	if shared.err != nil {
		t.Fatalf("Connect: %v", shared.err)
	}
	return shared.c
}

// testImage returns the sandbox image, or skips t (fails it in CI) when it
// does not exist.
func testImage(t testing.TB, c *Client) string {
	t.Helper()
	return testenv.StoreImage(t, "Podman", c.ImageExists, "run scripts/setup.sh (codebridge setup)")
}

// startTest starts a container running argv and removes it when t ends.
func startTest(t testing.TB, c *Client, s confine.Spec) *APIContainer {
	t.Helper()
	ct, err := c.Start(t.Context(), s)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ct.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	return ct
}

// client is e's connected client, or nil.
func (e *Engine) client() *Client {
	c, _ := e.Conn().(*Client)
	return c
}
