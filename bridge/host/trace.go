package host

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/tracing"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// attrApproval is the person's answer to a call the policy asked them
// about (allow, deny, ...), on a tool call's span.
const attrApproval = attribute.Key("codebridge.approval")

// tracer is tp's tracer for this package's spans.
func tracer(tp trace.TracerProvider) trace.Tracer {
	return tracing.Tracer(tp, "github.com/codebridge-mcp/codebridge/bridge/host")
}

// catalogMethod is the MCP method of a resource read or prompt get.
func catalogMethod(kind string) string {
	if kind == audit.KindPrompt {
		return tracing.MethodGetPrompt
	}
	return tracing.MethodReadResource
}

// describeCall sets the attributes of the span of a call that ended as rec
// records it: the names it resolved to, its sizes and outcome. A
// resource's URI is left out: the code chose it, and it can name anything.
func describeCall(span trace.Span, rec audit.Record) {
	if !span.IsRecording() {
		return
	}
	tool := observe.Cut(rec.Tool, observe.MaxTraceName)
	span.SetAttributes(tracing.Server.String(observe.Cut(rec.Server, observe.MaxTraceName)),
		tracing.Session.String(rec.Session), tracing.Run.Int(rec.Run),
		tracing.ArgBytes.Int(rec.ArgBytes), tracing.ResultBytes.Int(rec.ResultBytes))
	switch rec.Kind {
	case audit.KindResource:
		span.SetAttributes(semconv.McpMethodNameKey.String(tracing.MethodReadResource))
	case audit.KindPrompt:
		span.SetName(tracing.MethodGetPrompt + " " + tool)
		span.SetAttributes(semconv.McpMethodNameKey.String(tracing.MethodGetPrompt), semconv.GenAIPromptName(tool))
	default:
		span.SetName(tracing.MethodCallTool + " " + tool)
		span.SetAttributes(semconv.McpMethodNameKey.String(tracing.MethodCallTool), semconv.GenAIToolName(tool),
			semconv.GenAIOperationNameExecuteTool)
	}
	if rec.Confirm != "" {
		span.SetAttributes(attrApproval.String(rec.Confirm))
	}
	tracing.SetOutcome(span, rec.Outcome)
}

// describeSignIn sets the attributes of the span of a sign-in that ended
// with err, rec saying what the person answered.
func describeSignIn(span trace.Span, rec audit.Record, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.Server.String(rec.Server), tracing.Session.String(rec.Session), tracing.Run.Int(rec.Run))
	if rec.Confirm != "" {
		span.SetAttributes(attrApproval.String(rec.Confirm))
	}
	outcome := tracing.OK
	if err != nil {
		outcome = string(protocol.CodeOf(err))
	}
	tracing.SetOutcome(span, outcome)
}
