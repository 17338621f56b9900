package podman

import (
	"cmp"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// staleEnv sets how many leftover containers BenchmarkRemoveStale sweeps
// each time (scripts/bench.sh: 1,000).
const staleEnv = "CODEBRIDGE_BENCH_STALE"

// BenchmarkRemoveStale: the start-up sweep removing the containers a dead
// codebridge left: created but never started, as a codebridge killed
// between the two leaves them (those that started remove themselves). They
// carry a host name of their own, so no other codebridge on this machine
// sweeps them meanwhile.
func BenchmarkRemoveStale(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	n, err := strconv.Atoi(cmp.Or(os.Getenv(staleEnv), "100"))
	if err != nil || n < 1 {
		b.Fatalf("%s: want a count", staleEnv)
	}
	host := "codebridge-bench-" + strconv.Itoa(os.Getpid())
	dead := map[string]string{confine.LabelOwner: confine.Owner{Host: host, PID: 1<<22 + 1}.ID(), labelClient: host} // above any pid_max
	sweeper := &Client{conn: c.conn, uri: c.uri, apiVersion: c.apiVersion, log: c.log, owner: c.owner, self: confine.Owner{Host: host, PID: c.self.PID, Start: c.self.Start}}
	cs, err := newCreateSpec(confine.Spec{Image: img, Command: []string{"true"}}, dead, "")
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for range n {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := c.api().Do(b.Context(), requestTimeout, http.MethodPost, "/containers/create", nil, cs, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		b.StartTimer()
		start := time.Now()
		removed, err := sweeper.RemoveStale(b.Context())
		total += time.Since(start)
		if err != nil || removed != n {
			b.Fatalf("removed %d of %d: %v", removed, n, err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/sweep")
	b.ReportMetric(float64(n)/(total.Seconds()/float64(b.N)), "containers/s")
}
