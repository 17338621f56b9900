package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// traceCall is one entry of run_python's call trace, as docs/sandbox-api.md
// describes it.
type traceCall struct {
	Kind    string  `json:"kind"`
	Server  string  `json:"server"`
	Tool    string  `json:"tool"`
	MS      float64 `json:"ms"`
	Outcome string  `json:"outcome"`
}

// TestCallTraceEndToEnd: run_python's structured result lists the calls
// its code made, against a real server: those that succeeded, one the
// server answered with isError, one refused before reaching a server, a
// resource read, in the order they ended, with their times; a run without
// calls has no trace.
func TestCallTraceEndToEnd(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "servers.json", map[string]any{"everything": npmServers(t)["everything"]})
	cs, _ := session(t, bridgeEnv(t, dir))

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": `
print(await call_tool("everything", "get-sum", {"a": 2, "b": 40}))
await mcp_everything.echo(message="hi")
try:
    await call_tool("everything", "no-such-tool", {})
except Exception as e:
    print(type(e).__name__)
await read_resource("everything", "demo://resource/dynamic/text/7")
`}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Calls     []traceCall `json:"calls"`
		CallsMore int         `json:"calls_more"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("the run failed: %s", raw)
	}
	var asSent map[string]any // as the client got it, for docs/sandbox-api.md
	json.Unmarshal(raw, &asSent)
	pretty, _ := json.MarshalIndent(map[string]any{"calls": asSent["calls"]}, "", "  ")
	t.Logf("structuredContent.calls:\n%s", pretty)
	want := []traceCall{
		{Server: "everything", Tool: "get-sum", Outcome: "ok"},
		{Server: "everything", Tool: "echo", Outcome: "ok"},
		{Server: "everything", Tool: "no-such-tool", Outcome: "unknown_tool"},
		{Kind: "resource", Server: "everything", Tool: "demo://resource/dynamic/text/7", Outcome: "ok"},
	}
	if diff := cmp.Diff(want, out.Calls, cmpopts.IgnoreFields(traceCall{}, "MS")); diff != "" || out.CallsMore != 0 {
		t.Errorf("calls (-want +got):\n%s\ncalls_more = %d", diff, out.CallsMore)
	}
	for _, c := range out.Calls {
		if c.MS <= 0 {
			t.Errorf("call %+v has no duration", c)
		}
	}

	bare, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(bare.StructuredContent)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["calls"]; ok {
		t.Errorf("a run without calls has a trace: %s", raw)
	}
}
