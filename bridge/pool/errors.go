package pool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// Errors callers branch on with [errors.Is]. The errors the [Pool] returns wrap
// them with the server's name and what to do about it.
var (
	// ErrUnknownServer: no server with that name is configured.
	ErrUnknownServer = errors.New("unknown MCP server")
	// ErrUnknownTool: the server is running but does not offer a tool of
	// exactly that name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrDisabled: the server is configured with "disabled": true.
	ErrDisabled = errors.New("MCP server is disabled")
	// ErrServerExited: the server's process or connection ended while a
	// request was in flight. The server is restarted on its next use.
	ErrServerExited = errors.New("MCP server exited")
	// ErrUnsupported: the server does not declare the capability a request
	// needs (resources, prompts), so it was not asked.
	ErrUnsupported = errors.New("capability not declared by the server")
	// ErrClosed: the pool has been closed.
	ErrClosed = errors.New("server pool is closed")
	// ErrBusy: a tool call found every call slot of its server taken and
	// as many calls waiting as may wait ([BusyError] says how many), so it
	// was not sent.
	ErrBusy = errors.New("MCP server is busy")
)

// A BusyError reports that a tool call was refused at once, unsent: its
// server had Concurrency calls in flight, the most it is given at once,
// and Queue more waiting for a slot, the most that may wait.
type BusyError struct {
	Server      string
	Source      string // the file that defines the server, if known
	Concurrency int
	// Configured says Concurrency is the server's own "maxConcurrency",
	// not [Options.Concurrency].
	Configured bool
	Queue      int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("MCP server %q is busy: %d tool calls are in flight on it, the most it is given at once, and %d more are waiting, the most that may wait; the call was not sent",
		e.Server, e.Concurrency, e.Queue)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// A StartError reports that a server could not be started: its command did
// not run, it exited, it did not answer initialize in time, or its URL did not
// answer.
type StartError struct {
	Server     string
	Source     string   // the file that defines the server, if known
	Err        error    // wraps context.DeadlineExceeded on a timeout
	StderrTail []string // the last lines the server wrote to stderr (stdio only)
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "starting MCP server %q", e.Server)
	if e.Source != "" {
		fmt.Fprintf(&b, " (defined in %s)", e.Source)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	writeTail(&b, e.StderrTail)
	return b.String()
}

func (e *StartError) Unwrap() error { return e.Err }

// A remedied error says itself what to do about it (e.g. bridge/oauth's
// sign-in error names the command to run): no hint is added to it.
type remedied interface {
	error
	Remedy() string
}

// withHint is err with what to check added, unless err says what to do.
func withHint(def *discovery.Server, err error) error {
	if _, ok := errors.AsType[remedied](err); ok {
		return err
	}
	return fmt.Errorf("%w; %s", err, hint(def))
}

// hint says what to check when def fails to start.
func hint(def *discovery.Server) string {
	where := "its configuration"
	if def.Source != "" {
		where = def.Source
	}
	switch def.Transport {
	case discovery.Streamable, discovery.SSE:
		return fmt.Sprintf("check that %s is reachable and that \"url\" and \"headers\" in %s are right", def.Secrets.Mask(def.URL), where)
	default:
		return fmt.Sprintf("check \"command\", \"args\", \"env\" and \"cwd\" in %s, or run the command by hand to see why it fails", where)
	}
}

func writeTail(b *strings.Builder, tail []string) {
	if len(tail) == 0 {
		return
	}
	b.WriteString("\nlast lines of the server's stderr:")
	for _, l := range tail {
		b.WriteString("\n  ")
		b.WriteString(l)
	}
}

func tailText(tail []string) string {
	var b strings.Builder
	writeTail(&b, tail)
	return b.String()
}
