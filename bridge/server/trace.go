package server

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/tracing"
)

// The run_python span's attributes of its own (docs/observability.md).
const (
	attrCodeBytes   = attribute.Key("codebridge.code.bytes")
	attrStdoutBytes = attribute.Key("codebridge.stdout.bytes")
	attrStderrBytes = attribute.Key("codebridge.stderr.bytes")
	attrCalls       = attribute.Key("codebridge.calls")
	attrNewSession  = attribute.Key("codebridge.session.new")
)

// tracer is tp's tracer for this package's spans.
func tracer(tp trace.TracerProvider) trace.Tracer {
	return tracing.Tracer(tp, "github.com/codebridge-mcp/codebridge/bridge/server")
}

// traced runs run, the handling of req, in the span of one run_python
// call, whose parent is the trace context the client sent in the
// request's _meta, if any: the run's tool calls and the downstream
// servers' spans then belong to the client's trace.
func (s *Server) traced(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	ctx = tracing.Extract(ctx, req.Params.Meta)
	ctx, span := s.tracer.Start(ctx, tracing.MethodCallTool+" run_python", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	res, err := run(ctx)
	if span.IsRecording() {
		describeRun(span, req, res, err)
	}
	return res, err
}

// describeRun sets the attributes of a run_python span from how the call
// ended: res, or err when it ended without a result (the client cancelled).
func describeRun(span trace.Span, req *mcp.CallToolRequest, res *mcp.CallToolResult, err error) {
	span.SetAttributes(semconv.McpMethodNameKey.String(tracing.MethodCallTool), semconv.GenAIToolName("run_python"),
		semconv.GenAIOperationNameExecuteTool)
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			span.SetAttributes(semconv.McpProtocolVersion(ip.ProtocolVersion))
		}
	}
	var out output
	if res != nil {
		out, _ = res.StructuredContent.(output)
	}
	outcome := observe.OutcomeOK
	switch {
	case err != nil || res == nil:
		outcome = observe.OutcomeCancelled
	case out.Error != nil:
		outcome = string(out.Error.Kind)
	case out.ExitCode != 0:
		outcome = "exit"
	}
	tracing.SetOutcome(span, outcome)
	if out.Session != nil {
		span.SetAttributes(tracing.Session.String(out.Session.ID), tracing.Run.Int(out.Session.Run), attrNewSession.Bool(out.Session.New),
			attrStdoutBytes.Int64(out.StdoutBytes), attrStderrBytes.Int64(out.StderrBytes), attrCalls.Int(len(out.Calls)+out.CallsMore))
	}
}

// codeSize records the size of the run's code on the run_python span in ctx.
func codeSize(ctx context.Context, n int) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attrCodeBytes.Int(n))
	}
}
