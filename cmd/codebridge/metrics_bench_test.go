package main

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkToolCallGapHTTP is BenchmarkToolCallGap with the runs sent to
// serve --http, with its metrics (the default, every call counted) and
// without (MCP_BRIDGE_METRICS=0): what the metrics cost a tool call.
//
//	go test ./cmd/codebridge -run '^$' -bench 'ToolCallGapHTTP' -benchtime 20x -count 3
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
	toolCallGap(b, cs)
}
