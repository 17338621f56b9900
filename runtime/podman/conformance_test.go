package podman

import (
	"context"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginetest"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// TestConformance runs the engines' conformance suite against Podman.
func TestConformance(t *testing.T) { enginetest.Run(t, driver(t)) }

// BenchmarkStart: a sandbox container started until its Python answered
// print(1).
//
//	go test ./runtime/podman -run '^$' -bench Start -benchtime 20x
func BenchmarkStart(b *testing.B) { enginetest.BenchStart(b, driver(b)) }

// driver is the suite's view of this driver, on the test enginekit.
func driver(t testing.TB) enginetest.Driver {
	c := testClient(t)
	// as is a client on c's connection whose containers carry owner's labels
	// and whose sweep sees stale containers as self does.
	as := func(owner map[string]string, self confine.Owner) *Client {
		return &Client{conn: c.conn, uri: c.uri, apiVersion: c.apiVersion, log: c.log, owner: owner, self: self}
	}
	return enginetest.Driver{
		Name:  "Podman",
		Image: testImage(t, c),
		Init:  "podman-init", // catatonit, bind-mounted as /run/podman-init
		New: func(t testing.TB, spec confine.Spec) enginetest.Start {
			e := newTestEngine(t, EngineOptions{Spec: spec})
			return func(ctx context.Context) (sandbox.Container, error) { return e.Start(ctx, sandbox.Wait{}) }
		},
		StartOwned: func(ctx context.Context, spec confine.Spec, owner map[string]string) (string, error) {
			ct, err := as(owner, c.self).Start(ctx, spec)
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
		Sweep: func(ctx context.Context, self confine.Owner) (int, error) {
			return as(self.Labels(), self).removeStale(ctx, 0)
		},
		Remove: func(ctx context.Context, id string) error { return c.remove(ctx, id) },
	}
}
