package enginetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// BenchStart times what a run without a warm container waits for: a
// sandbox container started by the engine until its Python has answered
// print(1) over the sandbox's stream (its socket where the engine shares
// this host's files). It reports the median and the 95th percentile in
// milliseconds; removing each container is not timed.
func BenchStart(b *testing.B, d Driver) {
	start := d.New(b, Spec(confine.Spec{Command: python.Command(), Channel: python.ChannelEnv}))
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ct, err := start(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		res, err := python.Exec(b.Context(), ct.Stream(), python.Program{Code: "print(1)"}, nil, time.Minute)
		if err != nil || res.Stdout != "1\n" {
			b.Fatalf("print(1): %+v, %v", res, err)
		}
		ds = append(ds, time.Since(t0))
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ct.Remove(ctx)
		cancel()
		b.StartTimer()
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*95/100)]), "p95-ms")
	b.ReportMetric(0, "ns/op")
}
