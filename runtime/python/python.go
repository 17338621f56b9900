// Package python is the Python side of the sandbox and the host's end of the
// stream that connects it to codebridge: it starts interpreters, runs code in
// them and passes the sandbox's requests to a [Host].
//
// The Python files in this directory are embedded into the binary and sent to the
// container over its stream after it has started, so no file of the host is ever
// mounted into a container. [Command] is the argv a container runs: a small
// bootstrap that reads the helper module from the stream and then serves runs.
//
// # Interpreters and runs
//
// A container runs one long-lived interpreter ([Interpreter]); each run_python
// call is a run in it, and runs share the interpreter's global namespace, so
// variables, imports and files persist between them (a session). Runs of one
// interpreter happen one at a time. At a run's time limit the host sends an
// interrupt (KeyboardInterrupt in the code); code that does not stop within a
// grace period has its container killed.
//
// # What a run can make the host hold
//
// The host always reads the sandbox's output, whatever the code does, so
// back-pressure never forms a cycle through conmon. A run's requests are
// served at most [MaxRequests] at a time; up to [MaxQueuedRequests] more (and
// [MaxQueuedRequestBytes] of parameters) wait, and past that a request is
// refused at once with too_many_requests. Frames waiting for the sandbox to
// read them may take [MaxBacklog] bytes; a sandbox that stops reading past
// that is killed. So a hostile run costs the host at most about
// 64 × 4 MiB of requests being served, 32 MiB queued, 64 MiB of replies and
// twice the output limit.
//
// The frames, the methods the sandbox sends and their parameter and result
// types are defined in package [protocol].
package python

import (
	"context"
	"encoding/json"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Program is one run_python invocation as the sandbox sees it.
type Program struct {
	Code    string                // Python source; may use top-level await
	Servers []protocol.ServerInfo // servers visible to this run, for discovered_servers() and mcp_<alias>
	// OutputLimit caps each of stdout and stderr, in bytes; 0 means DefaultOutputLimit.
	OutputLimit int
	// Prelude is defined before the code (saved helpers); a session sends it
	// with its first run.
	Prelude []protocol.Source
	// CheckArgs checks the code's tool calls against the tools' schemas
	// before any of it runs (the check_args setting).
	CheckArgs bool
}

// DefaultOutputLimit is the per-stream output cap when [Program.OutputLimit] is 0.
const DefaultOutputLimit = 64 << 10

// Host answers the sandbox's requests by method name; [protocol.Server] is
// the one that dispatches them to a [protocol.Handler]. Call is invoked
// concurrently, once per request, and its ctx ends when the run ends.
type Host interface {
	Call(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// Result is what a run produced. It is filled as far as the run got, even when
// the run failed or was cut short.
type Result struct {
	Stdout          string        `json:"stdout"`
	Stderr          string        `json:"stderr"`
	StdoutBytes     int64         `json:"stdout_bytes"` // total written, before truncation
	StderrBytes     int64         `json:"stderr_bytes"`
	StdoutTruncated bool          `json:"stdout_truncated,omitempty"`
	StderrTruncated bool          `json:"stderr_truncated,omitempty"`
	ExitCode        int           `json:"exit_code"`
	Duration        time.Duration `json:"-"`
	// Background is output written between the previous run and this one
	// by threads or processes that code left running.
	Background string            `json:"background,omitempty"`
	Error      *protocol.Failure `json:"error,omitempty"` // nil when the code ran to the end
	// PreloadMissing, on the interpreter's first run, names the modules it
	// was to preload that its image does not have.
	PreloadMissing []string `json:"-"`
}
