package docker

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
}

func TestMain(m *testing.M) {
	enginetest.Child(func(spec confine.Spec, dir string) enginetest.Start {
		e := NewEngine(EngineOptions{Image: spec.Image, StateDir: dir, Spec: spec})
		return func(ctx context.Context) (sandbox.Container, error) { return e.Start(ctx, sandbox.Wait{}) }
	})
	code := m.Run()
	if shared.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if n, err := shared.c.RemoveByClient(ctx, shared.c.owner[labelClient]); err != nil || n > 0 {
			fmt.Fprintf(os.Stderr, "docker tests left %d containers behind (now removed), err %v\n", n, err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
		shared.c.Close()
	}
	os.Exit(code)
}

// testClient returns a client shared by the package's tests, connected to
// the Docker daemon DOCKER_HOST (or the defaults) names, or skips t when
// none answers: it fails t instead in CI when the tests run against Docker
// (MCP_BRIDGE_ENGINE=docker, scripts/test.sh's Docker phase).
func testClient(t testing.TB) *Client {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.c, shared.err = Connect(ctx, Options{Logger: testenv.Logger()})
	})
	if shared.err != nil {
		if testenv.Engine() != "docker" {
			t.Skipf("no Docker daemon (the Docker phase of scripts/test.sh starts one): %v", shared.err)
		}
		testenv.Missing(t, "a Docker daemon", "eval \"$(scripts/dockerd.sh start)\": "+shared.err.Error())
	}
	return shared.c
}

// testImage returns the sandbox image, or skips t (fails it in CI) when
// Docker does not have it.
func testImage(t testing.TB, c *Client) string {
	t.Helper()
	return testenv.StoreImage(t, "Docker", c.ImageExists, "run codebridge setup --engine docker")
}

// client is e's connected client, or nil.
func (e *Engine) client() *Client {
	c, _ := e.Conn().(*Client)
	return c
}
