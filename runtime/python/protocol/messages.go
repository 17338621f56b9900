package protocol

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
	FailBusy        FailureKind = "busy"                // refused: codebridge is at its limit of runs, or stopping
)

// FailArgumentCheck: a tool call written in the code does not match its
// tool's schema (an unknown tool or argument, a missing required one, a
// literal of the wrong type or outside an enum), found before the run
// started, so none of its lines ran. Its Message names each call's line,
// argument and signature (the check_args setting; see docs/sandbox-api.md).
const FailArgumentCheck FailureKind = "argument_check"
