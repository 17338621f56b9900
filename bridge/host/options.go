package host

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// Options are a [Directory]'s collaborators besides its pool; a zero field
// means none.
type Options struct {
	// MaxArgs is the largest arguments of one tool call, in bytes
	// (MCP_BRIDGE_MAX_ARGUMENT_SIZE); 0 means no limit.
	MaxArgs int
	// MaxCallsPerRun is how many tool calls one run may make
	// (MCP_BRIDGE_MAX_CALLS_PER_RUN); the call past it is refused with
	// too_many_calls. 0 means no cap.
	MaxCallsPerRun int
	// Tools is the global tool policy, which each server's entry refines.
	Tools discovery.ToolPolicy
	// Store holds memories and saved helpers.
	Store *memory.Store
	// Manifests holds each server's last tool list, from which docs and
	// search answer for a server that is not running.
	Manifests *manifest.Store
	// Audit records every tool call.
	Audit *audit.Log
	// Sink receives every tool call, resource read and prompt get of
	// every run when it ends (metrics, the dashboard).
	Sink   observe.Sink
	Logger *slog.Logger
	// Tracing gives the tracer of the spans of tool calls, resource reads,
	// prompt gets and sign-ins; nil traces nothing.
	Tracing trace.TracerProvider

	// QuarantineNew holds back the tools that have no pin in Manifests
	// (a new server's, a new tool of a known one) until a person approves
	// them (MCP_BRIDGE_QUARANTINE_NEW).
	QuarantineNew bool

	// ConfirmSaveTool asks the person, through the run's client, before
	// code saves a helper (MCP_BRIDGE_CONFIRM_SAVE_TOOL); a save they do not
	// allow, or that cannot be asked, is refused.
	ConfirmSaveTool bool

	// SignIn, if set, signs in to a server that a request of code needs
	// a sign-in for, when the run's client takes URL-mode questions: the
	// person is sent to the sign-in page, and the request is made again
	// once they signed in.
	SignIn SignIn

	// Setting names, for messages that say which setting to change, the
	// setting of key: max_argument_size, max_calls_per_run,
	// server_concurrency, server_queue, quarantine_new, confirm_save_tool.
	// Nil names the key itself.
	Setting func(key string) string

	// ResultBudget is how many bytes of encoded results the directory's
	// tool calls hold at once; 0 means [DefaultResultBudget].
	ResultBudget int64
}

// settingOf names the setting key as setting does; a nil setting names
// the key itself.
func settingOf(setting func(key string) string, key string) string {
	if setting == nil {
		return key
	}
	return setting(key)
}

// New returns a [Directory] with no servers in front of pool; [Directory.Update]
// publishes the first configuration.
func New(pool Downstream, opts Options) *Directory {
	d := newDirectory(pool, opts.MaxArgs, opts.Logger)
	d.tools, d.store, d.manifests, d.audit, d.sink = opts.Tools, opts.Store, opts.Manifests, opts.Audit, opts.Sink
	d.quarantineNew, d.signIn, d.confirmSave = opts.QuarantineNew, opts.SignIn, opts.ConfirmSaveTool
	d.setting, d.maxCalls = opts.Setting, opts.MaxCallsPerRun
	d.tracer = tracer(opts.Tracing)
	if opts.ResultBudget > 0 {
		d.inflight = newByteBudget(opts.ResultBudget)
	}
	return d
}
