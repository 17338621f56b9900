package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// TestReloadWhileRunsRead publishes configurations as parts.apply does (the
// pool first, then the directory) while runs read the server's definition
// through their snapshot, the pool starts it, and status is read. A
// definition, once published, must never change: under -race any write to one
// is reported, and afterwards every definition is compared with a copy taken
// before it was published.
func TestReloadWhileRunsRead(t *testing.T) {
	url := mathServer(t)
	p := pool.New(pool.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 20*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	d := newDirectory(p, 4<<20, nil)

	const generations = 40
	defs := make([]*discovery.Server, generations)
	want := make([]discovery.Server, generations)
	for i := range defs {
		defs[i] = &discovery.Server{
			Name: "m", Source: fmt.Sprintf("/cfg/%d.json", i), Description: fmt.Sprintf("generation %d", i),
			Transport: discovery.Streamable, URL: url,
			// Every other generation changes the endpoint, so the pool restarts
			// the server; the others change only what the pool keeps running through.
			Headers: map[string]string{"X-Generation": fmt.Sprint(i / 2)},
		}
		want[i] = clone(defs[i])
	}
	publish := func(i int) {
		cfg := &discovery.Config{Servers: []*discovery.Server{defs[i]}}
		p.Update(cfg.Servers)
		d.Update(cfg)
	}
	publish(0)

	// Each reload waits until the readers have done some reading since the
	// last one, so reads and reloads interleave however fast either is.
	const readers = 3
	done, read1 := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := 1; i < generations; i++ {
			for range readers {
				<-read1
			}
			publish(i)
		}
	})
	read := func(work func()) {
		wg.Go(func() {
			for {
				work()
				select {
				case read1 <- struct{}{}:
				case <-done:
					return
				}
			}
		})
	}
	read(func() { // a run's view: its snapshot's definition, and the server it reaches
		h := d.host(Run{})
		for _, srv := range h.snap.servers {
			_ = clone(srv)
		}
		_, _ = hostCall(t, h, "describe_server", map[string]any{"server": "m"}) // may fail while the server restarts
	})
	read(func() { _ = p.Status() })
	read(func() { _, _ = d.Prepare(t.Context(), []string{"m"}) })
	wg.Wait()

	for i, def := range defs {
		if diff := cmp.Diff(want[i], *def); diff != "" {
			t.Errorf("generation %d was modified after it was published (-before +after):\n%s", i, diff)
		}
	}
	if st := p.Status(); len(st) != 1 || st[0].Description != "generation 39" {
		t.Errorf("status after the last reload = %+v, want generation 39", st)
	}
}

// clone deep-copies s, reading every field.
func clone(s *discovery.Server) discovery.Server {
	c := *s
	c.Args = slices.Clone(s.Args)
	c.Env = maps.Clone(s.Env)
	c.Headers = maps.Clone(s.Headers)
	return c
}
