// Package python is the Python side of the sandbox and the Go half of the wire
// protocol that connects it to codebridge.
//
// The Python files in this directory are embedded into the binary and sent to the
// container over its standard input after it has started, so no file of the host is
// ever mounted into a container. [Command] is the argv a container runs: a small
// bootstrap that reads the helper module and the user's code from stdin.
//
// # Wire protocol
//
// All traffic uses the container's attached stdin (host → sandbox) and stdout
// (sandbox → host). Each message is a frame:
//
//	1 byte kind | 4 bytes big-endian payload length | payload
//
// Kinds from the host:
//
//	'S' start   JSON [Start]: the helper module sources, the user's code, and the
//	            servers visible to this run. Sent once, first.
//	'R' reply   JSON [Reply] to an 'Q' request, matched by id.
//
// Kinds from the sandbox:
//
//	'O' stdout  raw bytes written to fd 1 by the code or any child process
//	'E' stderr  raw bytes written to fd 2
//	'Q' request JSON [Request] for the host (list servers, call a tool, ...)
//	'X' exit    JSON [Exit]: how the code ended. Last frame.
//
// Before running user code the bootstrap moves the protocol onto private file
// descriptors and points fds 0, 1 and 2 at /dev/null and pipes, so nothing the
// code, a subprocess or a C extension writes can corrupt the framing. Output is
// chunked, so no line length limit exists anywhere. A frame longer than
// [MaxFrame] is a protocol error.
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

// MaxFrame bounds one frame's payload. Output is sent in small chunks, so only
// requests and replies carrying large tool arguments or results come near it.
const MaxFrame = 256 << 20

// MaxRequests bounds the requests of one run that the host serves at once;
// further requests wait for one of them to finish.
const MaxRequests = 64

// Program is one run_python invocation as the sandbox sees it.
type Program struct {
	Code    string       // Python source; may use top-level await
	Servers []ServerInfo // servers visible to this run, for discovered_servers() and mcp_<alias>
	// OutputLimit caps each of stdout and stderr, in bytes; 0 means DefaultOutputLimit.
	OutputLimit int
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
	// Tools of a loaded server: {name, alias, description, inputSchema} each.
	Tools []map[string]any `json:"tools,omitempty"`
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
	Error           *Failure      `json:"error,omitempty"` // nil when the code ran to the end
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
