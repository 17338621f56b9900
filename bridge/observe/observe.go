// Package observe records what each run and each of its tool calls did, once,
// for everything that watches them: the call trace in a run's result, the
// metrics, the traces and the dashboard. A run's [Trace] collects its calls;
// a [Sink] receives every call and every run when it ends.
package observe

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Outcomes of a call besides an error code (runtime/python/protocol's
// codes: policy_denied, quarantined, busy, ...).
const (
	OutcomeOK        = "ok"         // the tool answered
	OutcomeToolError = "tool_error" // the tool answered with isError
	OutcomeCancelled = "cancelled"  // the run ended or the client cancelled first
)

// Call is one tool call made from a run's code, as it ended.
type Call struct {
	// Kind is "" for a tool call, "resource" for a resource read (Tool is
	// its URI) and "prompt" for a prompt get.
	Kind   string `json:"kind,omitempty"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// MS is how long the call took, in milliseconds, from the sandbox's
	// request to the reply (approvals and sign-ins included).
	MS float64 `json:"ms"`
	// Outcome is ok, tool_error, cancelled, or the error code the code
	// got (policy_denied, not_found, busy, ...).
	Outcome string `json:"outcome"`

	// Start, Session, Run, ResultBytes and Known are for sinks; the call
	// trace in a result leaves them out.
	Start       time.Time `json:"-"`
	Session     string    `json:"-"` // the run's sandbox session
	Run         int       `json:"-"` // the run's number in it
	ResultBytes int       `json:"-"`
	Known       Known     `json:"-"`
}

// Known says which of a call's names are the configuration's: the rest
// are as the sandboxed code wrote them, chosen by it, which a sink must
// not key anything lasting on (a metric's labels).
type Known uint8

const (
	// KnownServer: Server is a configured server's name (an alias or a
	// name written as the code wrote it resolved to it).
	KnownServer Known = 1 << iota
	// KnownTool: Tool is one of that server's tools, as it lists it.
	KnownTool
)

// Run is one run_python call, as it ended.
type Run struct {
	Session  string
	Run      int
	Start    time.Time
	Duration time.Duration
	// Outcome is ok, exit (the code exited non-zero), or the failure's
	// kind (timeout, error, cancelled, ...).
	Outcome string
	// Calls is the run's call trace; CallsMore counts the calls past it.
	Calls     []Call
	CallsMore int
}

// Sink receives every tool call and every run when it ends. Its methods
// are called from many goroutines and must not block.
type Sink interface {
	Call(Call)
	Run(Run)
}

// Sinks is a [Sink] that hands each event to each of its sinks in turn.
type Sinks []Sink

// OrNil is s as a [Sink], or nil when s has none: nobody watches, and the
// callers skip building events.
func (s Sinks) OrNil() Sink {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Call implements [Sink].
func (s Sinks) Call(c Call) {
	for _, k := range s {
		k.Call(c)
	}
}

// Run implements [Sink].
func (s Sinks) Run(r Run) {
	for _, k := range s {
		k.Run(r)
	}
}

// Bounds of a call trace: the calls it lists, and the bytes of a server or
// tool name in it (a longer one is cut, ending in "…"). 100 calls of the
// longest names are under 30 KB of JSON; a run that makes more is counted.
const (
	MaxTraceCalls = 100
	MaxTraceName  = 128
)

// Trace collects the calls of one run, in the order they end: the first
// [MaxTraceCalls], and a count of the rest. A nil *Trace collects nothing.
type Trace struct {
	mu    sync.Mutex // protects following
	calls []Call
	more  int
}

// Add records c.
func (t *Trace) Add(c Call) {
	if t == nil {
		return
	}
	c.Server, c.Tool = Cut(c.Server, MaxTraceName), Cut(c.Tool, MaxTraceName)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.calls) >= MaxTraceCalls {
		t.more++
		return
	}
	t.calls = append(t.calls, c)
}

// Calls returns the calls recorded so far and how many more were made.
func (t *Trace) Calls() (calls []Call, more int) {
	if t == nil {
		return nil, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...), t.more
}

// Cut is s cut to at most n bytes of whole UTF-8 characters, ending in "…"
// when it was cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}
