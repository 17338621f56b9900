// Package metrics counts what codebridge does, for Prometheus: every run
// and tool call as it ends (a [Metrics] is an [observe.Sink]), each
// sandbox container start, and, read when scraped, what the sandbox, the
// run queue and the downstream servers hold at that moment. A [Metrics]
// has a registry of its own, served by [Metrics.Handler].
//
// Label values never come from sandboxed code: a server or tool name that
// did not resolve to a configured server and one of its tools is
// recorded as server="" or tool="", a server's tool names past
// [MaxToolsPerServer] as tool="", and an outcome outside the known ones
// as outcome="other". The series are then bounded by the configuration,
// whatever the code sends.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Namespace prefixes every metric's name.
const Namespace = "codebridge"

// MaxToolsPerServer bounds the tool label values of one server: tools
// past it (a server that lists more) are counted under tool="".
const MaxToolsPerServer = 256

// Sign-in states, the state label of codebridge_server_sign_in.
const (
	SignedIn    = "signed_in"     // holds tokens that are current or refresh themselves
	Expired     = "expired"       // the access token expired and nothing refreshes it
	NotSignedIn = "not_signed_in" // no sign-in stored
	SignInError = "unknown"       // the stored sign-in could not be read
)

// signInStates are the sign-in states, each a series of every server.
var signInStates = []string{SignedIn, Expired, NotSignedIn, SignInError}

// Sandbox is what the metrics read of the sandbox when scraped.
type Sandbox interface {
	Sessions() int       // live sessions
	WarmContainers() int // started containers waiting for a session
}

// Runs is what the metrics read of the MCP server when scraped.
type Runs interface {
	Runs() int // run_python calls in progress or waiting their turn
}

// Servers is what the metrics read of the downstream servers when
// scraped. Each map is keyed by a configured server's name.
type Servers interface {
	// States is how many configured servers are in each state (running,
	// starting, configured, failed, disabled).
	States() map[string]int
	// Quarantined is how many tools of each server are quarantined.
	Quarantined() map[string]int
	// SignIns is the sign-in state (SignedIn, ...) of each server that
	// codebridge signs in to.
	SignIns() map[string]string
}

// Options say what a [Metrics] reads when scraped; a nil one is left out.
type Options struct {
	Sandbox Sandbox
	Runs    Runs
	Servers Servers
}

// Metrics is codebridge's metrics and their registry.
type Metrics struct {
	reg *prometheus.Registry

	runs         *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	calls        *prometheus.CounterVec
	callDuration *prometheus.HistogramVec
	catalog      *prometheus.CounterVec
	starts       *prometheus.CounterVec
	startTime    prometheus.Histogram

	mu    sync.Mutex                     // protects following
	tools map[string]map[string]struct{} // by server: the tool label values it has
}

// New returns the metrics, registered with a registry of their own
// together with the Go runtime's and the process's.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "runs_total",
			Help: "run_python calls that ran code, by how they ended (ok, exit, exception, timeout, ...).",
		}, []string{"outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "run_duration_seconds",
			Help:    "How long run_python's code ran, in seconds, by how it ended.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "tool_calls_total",
			Help: "Tool calls from sandboxed code, by server, tool and outcome (ok, tool_error, cancelled, or the error code); server and tool are empty for names that did not resolve.",
		}, []string{"server", "tool", "outcome"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "tool_call_duration_seconds",
			Help:    "How long tool calls from sandboxed code took, in seconds, approvals and sign-ins included, by server.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server"}),
		catalog: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "catalog_requests_total",
			Help: "Resource reads and prompt gets from sandboxed code, by server, kind (resource, prompt) and outcome.",
		}, []string{"server", "kind", "outcome"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "sandbox_starts_total",
			Help: "Sandbox containers started, warm ones included, by outcome (ok, error).",
		}, []string{"outcome"}),
		startTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "sandbox_start_duration_seconds",
			Help:    "How long a sandbox container took to start, in seconds.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		tools: map[string]map[string]struct{}{},
	}
	m.starts.WithLabelValues("ok")
	m.starts.WithLabelValues("error")
	m.reg.MustRegister(m.runs, m.runDuration, m.calls, m.callDuration, m.catalog, m.starts, m.startTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.Sandbox != nil {
		sb := opts.Sandbox
		m.reg.MustRegister(
			gauge("sandbox_sessions", "Live sandbox sessions, each a container with its interpreter.", func() int { return sb.Sessions() }),
			gauge("sandbox_warm_containers", "Started sandbox containers waiting for a new session.", func() int { return sb.WarmContainers() }))
	}
	if opts.Runs != nil {
		r := opts.Runs
		m.reg.MustRegister(gauge("run_queue_depth", "run_python calls in progress or waiting their turn.", func() int { return r.Runs() }))
	}
	if opts.Servers != nil {
		m.reg.MustRegister(&serversCollector{s: opts.Servers})
	}
	return m
}

// gauge is a gauge read from f when scraped.
func gauge(name, help string, f func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help},
		func() float64 { return float64(f()) })
}

// Handler serves the metrics in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Call implements [observe.Sink].
func (m *Metrics) Call(c observe.Call) {
	server := ""
	if c.Known&observe.KnownServer != 0 {
		server = c.Server
	}
	outcome := callOutcome(c.Outcome)
	if c.Kind != "" {
		kind := c.Kind
		if kind != "resource" && kind != "prompt" {
			kind = "other"
		}
		m.catalog.WithLabelValues(server, kind, outcome).Inc()
		return
	}
	tool := ""
	if server != "" && c.Known&observe.KnownTool != 0 && m.admit(server, c.Tool) {
		tool = c.Tool
	}
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.callDuration.WithLabelValues(server).Observe(c.MS / 1000)
}

// admit reports whether tool may be a label value of server's: it is one
// already, or server has fewer than MaxToolsPerServer.
func (m *Metrics) admit(server, tool string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.tools[server]
	if _, ok := seen[tool]; ok {
		return true
	}
	if len(seen) >= MaxToolsPerServer {
		return false
	}
	if seen == nil {
		seen = map[string]struct{}{}
		m.tools[server] = seen
	}
	seen[tool] = struct{}{}
	return true
}

// Run implements [observe.Sink].
func (m *Metrics) Run(r observe.Run) {
	outcome := runOutcome(r.Outcome)
	m.runs.WithLabelValues(outcome).Inc()
	m.runDuration.WithLabelValues(outcome).Observe(r.Duration.Seconds())
}

// SandboxStarted records a sandbox container start that took took and
// failed with err, or did not (the sandbox's Options.Started).
func (m *Metrics) SandboxStarted(took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.starts.WithLabelValues(outcome).Inc()
	m.startTime.Observe(took.Seconds())
}

// callOutcomes are the outcomes of a call that are label values.
var callOutcomes = set(observe.OutcomeOK, observe.OutcomeToolError, observe.OutcomeCancelled,
	protocol.CodeUnknownServer, protocol.CodeUnknownTool, protocol.CodePolicyDenied, protocol.CodeDeclined,
	protocol.CodeBadArguments, protocol.CodeTooLarge, protocol.CodeConflict, protocol.CodeServerFailed,
	protocol.CodeTimeout, protocol.CodeTooManyRequests, protocol.CodeTooManyCalls, protocol.CodeBusy,
	protocol.CodeQuarantined, protocol.CodeUnsupported, protocol.CodeAuthRequired, protocol.CodeInternal)

// runOutcomes are the outcomes of a run that are label values: a
// failure's kind comes from the sandbox's exit frame, which the code can
// write.
var runOutcomes = set(observe.OutcomeOK, "exit",
	protocol.FailException, protocol.FailExit, protocol.FailTimeout, protocol.FailOOM, protocol.FailUnavailable,
	protocol.FailProtocol, protocol.FailBusy, protocol.FailArgumentCheck)

func callOutcome(s string) string { return known(callOutcomes, s) }
func runOutcome(s string) string  { return known(runOutcomes, s) }

// known is s if it is in set, else "other".
func known(set map[string]bool, s string) string {
	if set[s] {
		return s
	}
	return "other"
}

func set[S ~string](values ...S) map[string]bool {
	out := make(map[string]bool, len(values))
	for _, v := range values {
		out[string(v)] = true
	}
	return out
}
