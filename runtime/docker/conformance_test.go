package docker

import (
	"context"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginetest"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestConformance runs the engines' conformance suite against Docker.
func TestConformance(t *testing.T) { enginetest.Run(t, driver(t)) }

// BenchmarkStart: a sandbox container started until its Python answered
// print(1).
//
//	go test ./runtime/docker -run '^$' -bench Start -benchtime 20x
func BenchmarkStart(b *testing.B) { enginetest.BenchStart(b, driver(b)) }

// driver is the suite's view of this driver, on the test enginekit.
func driver(t testing.TB) enginetest.Driver {
	c := testClient(t)
	return enginetest.Driver{
		Name:  "Docker",
		Image: testImage(t, c),
		Init:  "docker-init",
		New: func(t testing.TB, spec confine.Spec) enginetest.Start {
			e := newTestEngine(t, EngineOptions{Spec: spec})
			return func(ctx context.Context) (sandbox.Container, error) { return e.Start(ctx, sandbox.Wait{}) }
		},
		StartOwned: func(ctx context.Context, spec confine.Spec, owner map[string]string) (string, error) {
			ct, err := c.start(ctx, spec, placement{owner: owner})
			if err != nil {
				return "", err
			}
			ct.CloseStreams() // it runs on, without its streams
			return ct.ID(), nil
		},
		List: func(ctx context.Context) (map[string]map[string]string, error) {
			list, err := c.List(ctx)
			found := map[string]map[string]string{}
			for _, s := range list {
				found[s.ID] = s.Labels
			}
			return found, err
		},
		Sweep:  func(ctx context.Context, self confine.Owner) (int, error) { return c.removeStale(ctx, self, 0) },
		Remove: func(ctx context.Context, id string) error { return c.remove(ctx, id) },
	}
}

// newTestEngine returns an engine on the test daemon, closed (and checked
// to leave nothing behind) when t ends.
func newTestEngine(t testing.TB, opts EngineOptions) *Engine {
	t.Helper()
	c := testClient(t)
	if opts.Image == "" {
		opts.Image = testImage(t, c)
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testenv.Logger()
	}
	e := NewEngine(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ec := e.client()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if ec != nil {
			label := ec.owner[labelClient]
			testenv.Eventually(t, "Docker removes the containers of a closed engine", func() bool { return countOwned(t, label) == 0 })
		}
	})
	return e
}

// countOwned counts the containers of the client with this label.
func countOwned(t testing.TB, clientLabel string) int {
	t.Helper()
	list, err := testClient(t).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list {
		if s.Labels[labelClient] == clientLabel {
			n++
		}
	}
	return n
}
