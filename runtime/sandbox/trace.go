package sandbox

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The attributes of the sandbox's spans (docs/observability.md).
const (
	attrWarm      = attribute.Key("codebridge.sandbox.warm") // a claim found a warm container; a start is for the warm pool
	attrContainer = attribute.Key("container.id")            // the engine's id of the started container
	attrOutcome   = attribute.Key("codebridge.outcome")      // ok, timeout, unavailable
	attrErrorType = attribute.Key("error.type")              // the outcome, when not ok
)

// tracer is tp's tracer for the sandbox's spans; nil gives the no-op one.
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/codebridge-mcp/codebridge/runtime/sandbox")
}

// startSpan starts the span of a container start. A start for the warm
// pool begins a trace of its own, linked to the run that asked for it (if
// any): it outlives that run, and is not part of its work.
func (m *Manager) startSpan(ctx context.Context, forWarm bool) (context.Context, trace.Span) {
	if !forWarm {
		return m.tracer.Start(ctx, "sandbox.start")
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot()}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := m.tracer.Start(ctx, "sandbox.start", opts...)
	if span.IsRecording() {
		span.SetAttributes(attrWarm.Bool(true))
	}
	return ctx, span
}

// endStart ends the span of a container start that started ct, or failed
// with err.
func endStart(span trace.Span, ct Container, err error) {
	if span.IsRecording() {
		if ct != nil {
			span.SetAttributes(attrContainer.String(ct.ID()))
		}
		setOutcome(span, err)
	}
	span.End()
}

// endClaim ends the span of a claim of a container for a session or a
// run, which found a warm one or started one (a child span), or failed
// with err.
func endClaim(span trace.Span, warm bool, err error) {
	if span.IsRecording() {
		span.SetAttributes(attrWarm.Bool(warm))
		setOutcome(span, err)
	}
	span.End()
}

// setOutcome records how what span covers ended: ok, timeout, or
// unavailable (the engine failed or the sandbox was shutting down), with
// an error status naming the outcome only (the engine's message can quote
// its configuration).
func setOutcome(span trace.Span, err error) {
	outcome := "ok"
	switch {
	case err == nil:
		span.SetAttributes(attrOutcome.String(outcome))
		return
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "timeout"
	default:
		outcome = "unavailable"
	}
	span.SetAttributes(attrOutcome.String(outcome), attrErrorType.String(outcome))
	span.SetStatus(codes.Error, outcome)
}
