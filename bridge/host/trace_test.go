package host

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// sinkRecorder is an observe.Sink that keeps what it got.
type sinkRecorder struct {
	mu    sync.Mutex
	calls []observe.Call
}

func (s *sinkRecorder) Call(c observe.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *sinkRecorder) Run(observe.Run) {}

// TestCallsReachTraceAndSink: every call_tool request, whether it reached
// the server or was refused, ends up once in the run's trace and once in
// the directory's sink, with the names it resolved to and its outcome.
func TestCallsReachTraceAndSink(t *testing.T) {
	fp := &recordingPool{}
	d := newDirectory(fp, 1000, nil)
	sink := &sinkRecorder{}
	d.sink = sink
	d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "big", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"}}})
	trace := new(observe.Trace)
	h := d.host(Run{Session: "s1", Run: 3, Trace: trace})

	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "big", "tool": "echo", "arguments": map[string]any{"message": "hi"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "big", "tool": "echo", "arguments": map[string]any{"message": strings.Repeat("x", 2000)}}); err == nil {
		t.Fatal("arguments over the limit were sent")
	}
	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "big", "tool": "nope"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "made-up", "tool": "echo"}); err == nil {
		t.Fatal("an unknown server was called")
	}

	// Known says which names resolved: a sink keys metrics on those only.
	want := []observe.Call{
		{Server: "big", Tool: "echo", Outcome: "ok", Session: "s1", Run: 3, ResultBytes: 1, Known: observe.KnownServer | observe.KnownTool},
		{Server: "big", Tool: "echo", Outcome: "bad_arguments", Session: "s1", Run: 3, Known: observe.KnownServer},
		{Server: "big", Tool: "nope", Outcome: "unknown_tool", Session: "s1", Run: 3, Known: observe.KnownServer},
		{Server: "made-up", Tool: "echo", Outcome: "unknown_server", Session: "s1", Run: 3},
	}
	ignore := cmpopts.IgnoreFields(observe.Call{}, "MS", "Start", "ResultBytes")
	got, more := trace.Calls()
	if diff := cmp.Diff(want, got, ignore); diff != "" || more != 0 {
		t.Errorf("trace (-want +got):\n%s; more = %d", diff, more)
	}
	if diff := cmp.Diff(want, sink.calls, ignore); diff != "" {
		t.Errorf("sink (-want +got):\n%s", diff)
	}
	for _, c := range got {
		if c.MS < 0 || c.Start.IsZero() {
			t.Errorf("call %+v has no start or a negative duration", c)
		}
	}
	if got[0].ResultBytes == 0 {
		t.Errorf("the call that succeeded has no result size: %+v", got[0])
	}
}
