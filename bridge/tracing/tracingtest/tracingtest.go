// Package tracingtest records the spans a test makes, and checks what they
// say, for the tests of the packages that make them.
package tracingtest

import (
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Recorder is a tracer provider that samples every span and keeps each as
// it ends.
type Recorder struct {
	*sdktrace.TracerProvider
	spans *tracetest.SpanRecorder
}

// New returns a recorder, shut down when the test ends.
func New(t testing.TB) *Recorder {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	return &Recorder{TracerProvider: tp, spans: spans}
}

// Ended is the spans that have ended, in the order they ended.
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan { return r.spans.Ended() }

// Named is the ended spans called name.
func (r *Recorder) Named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// One is the one ended span called name; the test fails unless there is
// exactly one.
func (r *Recorder) One(t testing.TB, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := r.Named(name)
	if len(spans) != 1 {
		t.Fatalf("%d spans named %q, want 1; ended: %s", len(spans), name, names(r.Ended()))
	}
	return spans[0]
}

func names(spans []sdktrace.ReadOnlySpan) string {
	var b []string
	for _, s := range spans {
		b = append(b, s.Name())
	}
	return strings.Join(b, ", ")
}

// Attrs is span's attributes by key, each value as its Go value.
func Attrs(span sdktrace.ReadOnlySpan) map[string]any {
	out := map[string]any{}
	for _, kv := range span.Attributes() {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// NoText fails the test if any ended span says one of texts anywhere: its
// name, an attribute, its status, an event or a link.
func (r *Recorder) NoText(t testing.TB, texts ...string) {
	t.Helper()
	for _, s := range r.Ended() {
		all := []string{s.Name(), s.Status().Description}
		for _, kv := range s.Attributes() {
			all = append(all, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events() {
			all = append(all, e.Name, fmt.Sprint(e.Attributes))
		}
		for _, l := range s.Links() {
			all = append(all, fmt.Sprint(l.Attributes))
		}
		for _, text := range texts {
			for _, got := range all {
				if strings.Contains(got, text) {
					t.Errorf("span %q says %q: %q", s.Name(), text, got)
				}
			}
		}
	}
}
