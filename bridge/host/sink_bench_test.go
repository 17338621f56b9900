package host

import (
	"encoding/json"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/metrics"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// BenchmarkCallToolSink is one call_tool through the host to a fake pool,
// without a sink and with the metrics as the sink: what counting a call
// adds to codebridge's side of it.
//
//	go test ./bridge/host -run '^$' -bench CallToolSink -count 5
func BenchmarkCallToolSink(b *testing.B) {
	for _, tt := range []struct {
		name string
		sink observe.Sink
	}{{"no-sink", nil}, {"metrics", metrics.New(metrics.Options{})}} {
		b.Run(tt.name, func(b *testing.B) {
			d := newDirectory(&recordingPool{}, 1000, nil)
			d.sink = tt.sink
			d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "big", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"}}})
			h := d.host(Run{Session: "s1", Run: 1})
			raw, _ := json.Marshal(map[string]any{"server": "big", "tool": "echo", "arguments": map[string]any{"message": "hi"}})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Call(b.Context(), "call_tool", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
