package main

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkToolCallTracing is the cost of tracing per tool call from code:
// two codebridges side by side, one with tracing off (no OTEL_* variables)
// and one sending its spans over OTLP/HTTP to a local endpoint that reads
// and discards them, each making 200 echo calls to a server-everything
// per iteration (timed inside the sandbox), in turn, the order
// alternating so that the machine's load moves both alike. It reports the
// median of each side and of the pairs' differences (traced-cost-us/call).
//
//	go test ./cmd/codebridge -run '^$' -bench ToolCallTracing -benchtime 20x
func BenchmarkToolCallTracing(b *testing.B) {
	const calls = 200
	var posts, bytes atomic.Int64
	sink := testenv.ServeOn(b, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		posts.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	off, _ := everythingSession(b, "MCP_BRIDGE_AUDIT=0", "OTEL_SDK_DISABLED=true")
	on, _ := everythingSession(b, "MCP_BRIDGE_AUDIT=0", "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_BSP_SCHEDULE_DELAY=200")
	code := testenv.PythonTimed(calls, `await call_tool("everything", "echo", {"message": "x"})`)
	run := func(which string) time.Duration {
		cs := off
		if which == "on" {
			cs = on
		}
		var us float64
		out := mustRun(b, cs, code, "timeout", 120)
		if _, err := fmt.Sscan(out, &us); err != nil {
			b.Fatalf("output %q", out)
		}
		return time.Duration(us * 1e3)
	}
	run("on") // both warm
	var costs, offs, ons []time.Duration
	for i := 0; b.Loop(); i++ {
		var o, t time.Duration
		if i%2 == 0 {
			o, t = run("off"), run("on")
		} else {
			t, o = run("on"), run("off")
		}
		costs, offs, ons = append(costs, t-o), append(offs, o), append(ons, t)
	}
	reportMedian(b, costs, "traced-cost-us/call")
	reportMedian(b, offs, "off-us/call")
	reportMedian(b, ons, "traced-us/call")
	testenv.Eventually(b, "the traced codebridge's spans reach the OTLP endpoint", func() bool { return posts.Load() > 0 })
	b.ReportMetric(float64(bytes.Load())/float64(posts.Load()), "otlp-bytes/post")
}
