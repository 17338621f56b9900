// Package python is the Python side of the sandbox and the Go half of the wire
// protocol that connects it to codebridge.
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
// # Wire protocol
//
// All traffic uses one stream: a unix socket the bootstrap connects to when
// [ChannelEnv] names one, else the container's attached stdin (host →
// sandbox) and stdout (sandbox → host). Each message is a frame:
//
//	1 byte kind | 4 bytes big-endian payload length | payload
//
// Kinds from the host:
//
//	'S' start      JSON [Init]: the helper module sources and saved helpers. Sent once, first.
//	'C' run        JSON [RunFrame]: one run's code and the servers it can see.
//	'R' reply      JSON [Reply] to a 'Q' request, matched by id.
//	'I' interrupt  JSON [Interrupt]: stop the given run's code.
//
// Kinds from the sandbox, each with a size limit the host checks before
// reading the payload:
//
//	'O' stdout   raw bytes written to fd 1 by the code or any child process (64 KiB)
//	'E' stderr   raw bytes written to fd 2 (64 KiB)
//	'Q' request  JSON [Request] for the host (4 MiB + 64 KiB by default; [Limits])
//	'X' exit     JSON [Exit]: how one run ended (1 MiB)
//
// Before running user code the runner moves the protocol onto private file
// descriptors and points fds 0, 1 and 2 at /dev/null and pipes, so nothing the
// code, a subprocess or a C extension writes can corrupt the framing. Output is
// chunked, so no line length limit exists anywhere. Output that arrives between
// runs (from threads the code left running) is kept, up to 16 KiB, and
// returned with the next run as [Result.Background].
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
// # Requests
//
// The sandbox's helper module (sandbox/mcp, importable there as mcp) sends these
// methods to the [Host]; server and tool may be names or aliases:
//
//	describe_server  {server}                 → {name, alias, description, tools: [{name, alias, description}]}
//	list_tools       {server}                 → [{name, alias, description, inputSchema, outputSchema?}]
//	query_tool_docs  {server, tool|null, detail} → [{server, serverAlias, tool, toolAlias, description,
//	                                               inputSchema?, outputSchema?, signature?}]
//	search_tool_docs {query, limit, detail}   → the same dicts with score, best first
//	call_tool        {server, tool, arguments} → the MCP CallToolResult (content, structuredContent?, isError?)
//
// A Host error becomes a [ReplyError]: its code is the error's RPCCode() string
// when it has that method (unknown_server, unknown_tool, bad_arguments,
// server_failed, timeout), else "internal"; its data is RPCData() any when
// present; its message is err.Error(). The sandbox raises it as MCPError.
package python

import (
	"context"
	"encoding/json"
	"time"
)

// Program is one run_python invocation as the sandbox sees it.
type Program struct {
	Code    string       // Python source; may use top-level await
	Servers []ServerInfo // servers visible to this run, for discovered_servers() and mcp_<alias>
	// OutputLimit caps each of stdout and stderr, in bytes; 0 means DefaultOutputLimit.
	OutputLimit int
	// Prelude is defined before the code (saved helpers); a session sends it
	// with its first run.
	Prelude []Source
}

// DefaultOutputLimit is the per-stream output cap when [Program.OutputLimit] is 0.
const DefaultOutputLimit = 64 << 10

// ServerInfo describes a configured MCP server. Servers named in run_python's
// "servers" argument are loaded: started before the run, with their tools
// listed here for list_loaded_server_metadata().
type ServerInfo struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"` // a valid Python identifier, unique in the run
	Description string `json:"description,omitempty"`
	Loaded      bool   `json:"loaded,omitempty"`
	// Tools of a loaded server.
	Tools []ToolSummary `json:"tools,omitempty"`
}

// Host answers the sandbox's requests. Call is invoked concurrently, once per
// request, and its ctx ends when the run ends.
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
	Background string   `json:"background,omitempty"`
	Error      *Failure `json:"error,omitempty"` // nil when the code ran to the end
}

// Failure says what went wrong in a run, in fields a program can branch on.
type Failure struct {
	Kind      FailureKind `json:"kind"`
	Message   string      `json:"message"`
	Type      string      `json:"type,omitempty"`      // exception class, e.g. "ZeroDivisionError"
	Traceback string      `json:"traceback,omitempty"` // formatted, user frames only
}

// FailureKind classifies a [Failure].
type FailureKind string

const (
	FailException   FailureKind = "exception"           // the code raised (including SyntaxError)
	FailExit        FailureKind = "exit"                // sys.exit with a non-zero status, or the process died
	FailTimeout     FailureKind = "timeout"             // killed after the run's time limit
	FailOOM         FailureKind = "out_of_memory"       // MemoryError or killed by the memory limit
	FailUnavailable FailureKind = "sandbox_unavailable" // Podman or the image could not be used
	FailProtocol    FailureKind = "protocol"            // the sandbox broke the framing
)
