package main

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkToolCallGapHTTP is BenchmarkToolCallGap with the runs sent to
// serve --http, with its metrics (the default, every call counted) and
// without (MCP_BRIDGE_METRICS=0): what the metrics cost a tool call. It
// also reports codebridge's CPU time per call (bridge-cpu-us/call). Under
// load, run the two in turn, each in a process of its own:
//
//	for i in 1 2 3 4 5; do for v in metrics no-metrics; do
//	  go test ./cmd/codebridge -run '^$' -bench "ToolCallGapHTTP/^$v\$" -benchtime 20x
//	done; done
func BenchmarkToolCallGapHTTP(b *testing.B) {
	b.Run("metrics", func(b *testing.B) { benchGapHTTP(b) })
	b.Run("no-metrics", func(b *testing.B) { benchGapHTTP(b, "MCP_BRIDGE_METRICS=0") })
}

func benchGapHTTP(b *testing.B, env ...string) {
	dir := b.TempDir()
	writeServers(b, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(b, "mcp-server-everything")}})
	hb := startHTTP(b, bridgeEnv(b, dir, append(env, "MCP_BRIDGE_AUDIT=0", "MCP_BRIDGE_LOG_LEVEL=info")...))
	cs := hb.goClient(b, hb.Token)
	mustRun(b, cs, `await call_tool("everything", "echo", {"message": "warm"})`)
	cpu, _ := testenv.ProcessCPU(hb.Cmd.Process.Pid)
	toolCallGap(b, cs)
	cpu2, _ := testenv.ProcessCPU(hb.Cmd.Process.Pid)
	// codebridge's CPU time per call from code, its share of each run
	// included: a figure the machine's load moves less than the wall time.
	b.ReportMetric(float64((cpu2-cpu).Nanoseconds())/1e3/float64(b.N*gapCalls), "bridge-cpu-us/call")
}
