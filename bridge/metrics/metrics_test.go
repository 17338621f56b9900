package metrics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/codebridge-mcp/codebridge/bridge/observe"
)

// fakeState is every part the metrics read when scraped.
type fakeState struct {
	sessions, warm, runs int
	states               map[string]int
	quarantined          map[string]int
	signIns              map[string]string
}

func (f *fakeState) Sessions() int               { return f.sessions }
func (f *fakeState) WarmContainers() int         { return f.warm }
func (f *fakeState) Runs() int                   { return f.runs }
func (f *fakeState) States() map[string]int      { return f.states }
func (f *fakeState) Quarantined() map[string]int { return f.quarantined }
func (f *fakeState) SignIns() map[string]string  { return f.signIns }
func newWith(f *fakeState) *Metrics              { return New(Options{Sandbox: f, Runs: f, Servers: f}) }
func compare(t *testing.T, m *Metrics, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestEvents: runs, tool calls, resource reads and sandbox starts, as
// they end, in the scrape.
func TestEvents(t *testing.T) {
	m := newWith(&fakeState{})
	// Durations exact in binary, so that their sum is.
	both := observe.KnownServer | observe.KnownTool
	m.Call(observe.Call{Server: "files", Tool: "read", MS: 1.953125, Outcome: observe.OutcomeOK, Known: both})
	m.Call(observe.Call{Server: "files", Tool: "read", MS: 31.25, Outcome: observe.OutcomeOK, Known: both})
	m.Call(observe.Call{Server: "files", Tool: "read", MS: 3.90625, Outcome: "timeout", Known: both})
	m.Call(observe.Call{Kind: "resource", Server: "files", Tool: "file:///etc/hosts", MS: 1, Outcome: observe.OutcomeOK, Known: observe.KnownServer})
	m.Run(observe.Run{Duration: 300 * time.Millisecond, Outcome: observe.OutcomeOK})
	m.Run(observe.Run{Duration: 2 * time.Second, Outcome: "timeout"})
	m.SandboxStarted(700*time.Millisecond, nil)
	m.SandboxStarted(10*time.Millisecond, errors.New("no image"))

	compare(t, m, `
# HELP codebridge_tool_calls_total Tool calls from sandboxed code, by server, tool and outcome (ok, tool_error, cancelled, or the error code); server and tool are empty for names that did not resolve.
# TYPE codebridge_tool_calls_total counter
codebridge_tool_calls_total{outcome="ok",server="files",tool="read"} 2
codebridge_tool_calls_total{outcome="timeout",server="files",tool="read"} 1
# HELP codebridge_catalog_requests_total Resource reads and prompt gets from sandboxed code, by server, kind (resource, prompt) and outcome.
# TYPE codebridge_catalog_requests_total counter
codebridge_catalog_requests_total{kind="resource",outcome="ok",server="files"} 1
# HELP codebridge_runs_total run_python calls that ran code, by how they ended (ok, exit, exception, timeout, ...).
# TYPE codebridge_runs_total counter
codebridge_runs_total{outcome="ok"} 1
codebridge_runs_total{outcome="timeout"} 1
# HELP codebridge_sandbox_starts_total Sandbox containers started, warm ones included, by outcome (ok, error).
# TYPE codebridge_sandbox_starts_total counter
codebridge_sandbox_starts_total{outcome="error"} 1
codebridge_sandbox_starts_total{outcome="ok"} 1
`, "codebridge_tool_calls_total", "codebridge_catalog_requests_total", "codebridge_runs_total", "codebridge_sandbox_starts_total")

	compare(t, m, `
# HELP codebridge_tool_call_duration_seconds How long tool calls from sandboxed code took, in seconds, approvals and sign-ins included, by server.
# TYPE codebridge_tool_call_duration_seconds histogram
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.001"} 0
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.0025"} 1
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.005"} 2
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.01"} 2
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.025"} 2
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.05"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.1"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.25"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="0.5"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="1"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="2.5"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="5"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="10"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="30"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="60"} 3
codebridge_tool_call_duration_seconds_bucket{server="files",le="+Inf"} 3
codebridge_tool_call_duration_seconds_sum{server="files"} 0.037109375
codebridge_tool_call_duration_seconds_count{server="files"} 3
# HELP codebridge_sandbox_start_duration_seconds How long a sandbox container took to start, in seconds.
# TYPE codebridge_sandbox_start_duration_seconds histogram
codebridge_sandbox_start_duration_seconds_bucket{le="0.05"} 1
codebridge_sandbox_start_duration_seconds_bucket{le="0.1"} 1
codebridge_sandbox_start_duration_seconds_bucket{le="0.25"} 1
codebridge_sandbox_start_duration_seconds_bucket{le="0.5"} 1
codebridge_sandbox_start_duration_seconds_bucket{le="1"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="2.5"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="5"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="10"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="30"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="60"} 2
codebridge_sandbox_start_duration_seconds_bucket{le="+Inf"} 2
codebridge_sandbox_start_duration_seconds_sum 0.71
codebridge_sandbox_start_duration_seconds_count 2
`, "codebridge_tool_call_duration_seconds", "codebridge_sandbox_start_duration_seconds")

	if n := testutil.CollectAndCount(m.runDuration); n != 2 {
		t.Errorf("codebridge_run_duration_seconds has %d series, want 2 (ok, timeout)", n)
	}
}

// TestState: the gauges read the parts when scraped, each time anew.
func TestState(t *testing.T) {
	f := &fakeState{sessions: 3, warm: 1, runs: 5,
		states:      map[string]int{"running": 2, "configured": 1, "failed": 1},
		quarantined: map[string]int{"files": 2, "git": 0},
		signIns:     map[string]string{"linear": SignedIn, "notion": Expired}}
	m := newWith(f)
	compare(t, m, `
# HELP codebridge_sandbox_sessions Live sandbox sessions, each a container with its interpreter.
# TYPE codebridge_sandbox_sessions gauge
codebridge_sandbox_sessions 3
# HELP codebridge_sandbox_warm_containers Started sandbox containers waiting for a new session.
# TYPE codebridge_sandbox_warm_containers gauge
codebridge_sandbox_warm_containers 1
# HELP codebridge_run_queue_depth run_python calls in progress or waiting their turn.
# TYPE codebridge_run_queue_depth gauge
codebridge_run_queue_depth 5
# HELP codebridge_downstream_servers Configured downstream MCP servers, by state (configured: not running; starting; running; failed; disabled).
# TYPE codebridge_downstream_servers gauge
codebridge_downstream_servers{state="configured"} 1
codebridge_downstream_servers{state="disabled"} 0
codebridge_downstream_servers{state="failed"} 1
codebridge_downstream_servers{state="running"} 2
codebridge_downstream_servers{state="starting"} 0
# HELP codebridge_quarantined_tools Tools of a server held back until approved (changed since pinned, flagged, repeated, or new under quarantine_new), from its last tool list.
# TYPE codebridge_quarantined_tools gauge
codebridge_quarantined_tools{server="files"} 2
codebridge_quarantined_tools{server="git"} 0
# HELP codebridge_server_sign_in 1 for the sign-in state a server that codebridge signs in to (OAuth) is in, 0 for the others.
# TYPE codebridge_server_sign_in gauge
codebridge_server_sign_in{server="linear",state="expired"} 0
codebridge_server_sign_in{server="linear",state="not_signed_in"} 0
codebridge_server_sign_in{server="linear",state="signed_in"} 1
codebridge_server_sign_in{server="linear",state="unknown"} 0
codebridge_server_sign_in{server="notion",state="expired"} 1
codebridge_server_sign_in{server="notion",state="not_signed_in"} 0
codebridge_server_sign_in{server="notion",state="signed_in"} 0
codebridge_server_sign_in{server="notion",state="unknown"} 0
`, "codebridge_sandbox_sessions", "codebridge_sandbox_warm_containers", "codebridge_run_queue_depth",
		"codebridge_downstream_servers", "codebridge_quarantined_tools", "codebridge_server_sign_in")

	f.runs, f.sessions = 0, 4
	compare(t, m, `
# HELP codebridge_run_queue_depth run_python calls in progress or waiting their turn.
# TYPE codebridge_run_queue_depth gauge
codebridge_run_queue_depth 0
# HELP codebridge_sandbox_sessions Live sandbox sessions, each a container with its interpreter.
# TYPE codebridge_sandbox_sessions gauge
codebridge_sandbox_sessions 4
`, "codebridge_run_queue_depth", "codebridge_sandbox_sessions")

	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestCardinality: names the code made up, or that did not resolve, add
// no series: 10,000 calls of made-up servers and tools, and of one
// server's made-up tools, leave one series each of server="" and tool="";
// a server's real tools past MaxToolsPerServer join tool="", and unknown
// outcomes and kinds are "other".
func TestCardinality(t *testing.T) {
	m := newWith(&fakeState{})
	for i := range 10000 {
		m.Call(observe.Call{Server: fmt.Sprintf("srv%d", i), Tool: fmt.Sprintf("t%d", i), Outcome: "unknown_server"})
		m.Call(observe.Call{Server: "files", Tool: fmt.Sprintf("t%d", i), Outcome: "unknown_tool", Known: observe.KnownServer})
		// A tool the code named is never known without its server.
		m.Call(observe.Call{Server: fmt.Sprintf("srv%d", i), Tool: "read", Outcome: "ok", Known: observe.KnownTool})
		m.Call(observe.Call{Kind: "resource", Server: "files", Tool: fmt.Sprintf("file:///%d", i), Outcome: "ok", Known: observe.KnownServer})
		m.Call(observe.Call{Kind: fmt.Sprintf("kind%d", i), Server: "files", Outcome: fmt.Sprintf("code%d", i), Known: observe.KnownServer})
		m.Run(observe.Run{Outcome: fmt.Sprintf("kind%d", i)})
	}
	compare(t, m, `
# HELP codebridge_tool_calls_total Tool calls from sandboxed code, by server, tool and outcome (ok, tool_error, cancelled, or the error code); server and tool are empty for names that did not resolve.
# TYPE codebridge_tool_calls_total counter
codebridge_tool_calls_total{outcome="ok",server="",tool=""} 10000
codebridge_tool_calls_total{outcome="unknown_server",server="",tool=""} 10000
codebridge_tool_calls_total{outcome="unknown_tool",server="files",tool=""} 10000
# HELP codebridge_catalog_requests_total Resource reads and prompt gets from sandboxed code, by server, kind (resource, prompt) and outcome.
# TYPE codebridge_catalog_requests_total counter
codebridge_catalog_requests_total{kind="other",outcome="other",server="files"} 10000
codebridge_catalog_requests_total{kind="resource",outcome="ok",server="files"} 10000
# HELP codebridge_runs_total run_python calls that ran code, by how they ended (ok, exit, exception, timeout, ...).
# TYPE codebridge_runs_total counter
codebridge_runs_total{outcome="other"} 10000
`, "codebridge_tool_calls_total", "codebridge_catalog_requests_total", "codebridge_runs_total")
	if n := testutil.CollectAndCount(m.callDuration); n != 2 {
		t.Errorf("codebridge_tool_call_duration_seconds has %d series, want 2 (server files and server \"\")", n)
	}

	// A server that lists more tools than the bound.
	m = newWith(&fakeState{})
	for i := range MaxToolsPerServer + 10 {
		m.Call(observe.Call{Server: "big", Tool: fmt.Sprintf("t%d", i), Outcome: "ok", Known: observe.KnownServer | observe.KnownTool})
	}
	if n := testutil.CollectAndCount(m.calls); n != MaxToolsPerServer+1 {
		t.Errorf("%d series for a server of %d tools, want %d: the first %d and tool=\"\"", n, MaxToolsPerServer+10, MaxToolsPerServer+1, MaxToolsPerServer)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("big", "", "ok")); got != 10 {
		t.Errorf("tool=\"\" of server big counted %v calls, want the 10 past the bound", got)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("big", "t0", "ok")); got != 1 {
		t.Errorf("tool t0 counted %v calls, want 1", got)
	}
}

// BenchmarkCall is what the metrics add to one tool call: its counter and
// its duration.
//
//	go test ./bridge/metrics -run '^$' -bench Call
func BenchmarkCall(b *testing.B) {
	m := newWith(&fakeState{})
	c := observe.Call{Server: "everything", Tool: "echo", MS: 0.3, Outcome: observe.OutcomeOK, Known: observe.KnownServer | observe.KnownTool}
	b.ReportAllocs()
	for b.Loop() {
		m.Call(c)
	}
}
