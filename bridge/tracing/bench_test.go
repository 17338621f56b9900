package tracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkCallSpan is what codebridge does per tool call for tracing: a
// span started, described and ended, and the trace context put in the
// request's _meta; off (the no-op tracer, with a client's trace context to
// pass on) and on (the SDK, sampling everything, to an exporter that keeps
// nothing, so that only codebridge's side is measured).
//
//	go test ./bridge/tracing -run '^$' -bench CallSpan -benchmem
func BenchmarkCallSpan(b *testing.B) {
	parent := Extract(context.Background(), map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { sdk.Shutdown(context.Background()) })
	for _, tt := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", noop.NewTracerProvider()}, {"on", sdk}} {
		b.Run(tt.name, func(b *testing.B) {
			tr := tt.tp.Tracer("bench")
			for b.Loop() {
				ctx, span := tr.Start(parent, MethodCallTool, trace.WithSpanKind(trace.SpanKindClient))
				if span.IsRecording() {
					span.SetName(MethodCallTool + " echo")
					span.SetAttributes(Server.String("everything"), Session.String("e3f27c3e6901"), Run.Int(1),
						ArgBytes.Int(17), ResultBytes.Int(61))
					SetOutcome(span, OK)
				}
				Inject(ctx, map[string]any{})
				span.End()
			}
		})
	}
}
