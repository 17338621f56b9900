package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The attributes of codebridge's spans besides OpenTelemetry's own
// (mcp.method.name, gen_ai.tool.name, error.type, ...). Each is listed in
// docs/observability.md; none holds an argument's value, a result, code
// or a secret: only names, sizes, counts and outcomes.
const (
	Server      = attribute.Key("codebridge.server")        // a downstream server, by its configured name
	Session     = attribute.Key("codebridge.session.id")    // a sandbox session: its interpreter's id, never its handle
	Run         = attribute.Key("codebridge.run.number")    // a run's number in its session
	Outcome     = attribute.Key("codebridge.outcome")       // ok, or how it failed
	ArgBytes    = attribute.Key("codebridge.request.bytes") // the size of a request's arguments
	ResultBytes = attribute.Key("codebridge.result.bytes")  // the size of an answer
)

// MCP method names, for mcp.method.name.
const (
	MethodCallTool     = "tools/call"
	MethodReadResource = "resources/read"
	MethodGetPrompt    = "prompts/get"
)

// OK is the outcome of what succeeded.
const OK = "ok"

// SetOutcome records on span how it ended: codebridge.outcome, and, for
// anything but [OK], error.type and an error status whose description is
// the outcome alone (an error's message can quote what a server was sent).
func SetOutcome(span trace.Span, outcome string) {
	span.SetAttributes(Outcome.String(outcome))
	if outcome != OK {
		span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
		span.SetStatus(codes.Error, outcome)
	}
}

// Tracer is tp's tracer for the instrumentation scope name (the package
// that makes the spans); a nil tp gives the no-op tracer.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(name)
}
