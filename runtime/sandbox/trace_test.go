//go:build unix

package sandbox

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// spansNamed is the ended spans of rec called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) any {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

// TestSandboxSpans: a session's claim of a container is a span of the run
// that needed it, with the container start inside it when none was warm;
// a start for the warm pool is a trace of its own, linked to the run that
// asked for it.
func TestSandboxSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })

	t.Run("cold", func(t *testing.T) {
		rec.Reset()
		m := newManager(t, newFakeEngine(t), Options{Tracing: tp})
		ctx, runSpan := tp.Tracer("test").Start(t.Context(), "run")
		if _, err := m.Run(ctx, Request{Session: "a", Program: python.Program{Code: "pass"}, Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		runSpan.End()
		claims, starts := spansNamed(rec, "sandbox.claim"), spansNamed(rec, "sandbox.start")
		if len(claims) != 1 || len(starts) != 1 {
			t.Fatalf("%d claims and %d starts, want 1 of each", len(claims), len(starts))
		}
		claim, start := claims[0], starts[0]
		if claim.Parent().SpanID() != runSpan.SpanContext().SpanID() || start.Parent().SpanID() != claim.SpanContext().SpanID() {
			t.Errorf("claim's parent %v, start's %v: want run, then claim", claim.Parent(), start.Parent())
		}
		if attr(claim, "codebridge.sandbox.warm") != false || attr(claim, "codebridge.outcome") != "ok" {
			t.Errorf("claim attributes %v", claim.Attributes())
		}
		if id, _ := attr(start, "container.id").(string); id == "" || attr(start, "codebridge.outcome") != "ok" || attr(start, "codebridge.sandbox.warm") != nil {
			t.Errorf("start attributes %v", start.Attributes())
		}
	})

	t.Run("warm", func(t *testing.T) {
		rec.Reset()
		m := newManager(t, newFakeEngine(t), Options{Warm: 1, Tracing: tp})
		m.Warm(t.Context())
		ctx, runSpan := tp.Tracer("test").Start(t.Context(), "run")
		if _, err := m.Run(ctx, Request{Session: "a", Program: python.Program{Code: "pass"}, Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		runSpan.End()
		// The first warm container and its replacement, started in the background.
		waitFor(t, func() bool { return len(spansNamed(rec, "sandbox.start")) == 2 })
		claims, starts := spansNamed(rec, "sandbox.claim"), spansNamed(rec, "sandbox.start")
		if len(claims) != 1 || attr(claims[0], "codebridge.sandbox.warm") != true || claims[0].Parent().SpanID() != runSpan.SpanContext().SpanID() {
			t.Fatalf("claims %v", claims)
		}
		for i, s := range starts {
			if s.Parent().IsValid() || attr(s, "codebridge.sandbox.warm") != true {
				t.Errorf("warm start %d: parent %v, attributes %v", i, s.Parent(), s.Attributes())
			}
		}
		if l := starts[1].Links(); len(l) != 1 || l[0].SpanContext.SpanID() != runSpan.SpanContext().SpanID() {
			t.Errorf("the replacement's links %v, want the run", l)
		}
		if len(starts[0].Links()) != 0 {
			t.Errorf("the start at warm-up links %v", starts[0].Links())
		}
	})
}
