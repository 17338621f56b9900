package server

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/tracing/tracingtest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// spanRunner is a fakeRunner that keeps the span context its runs get.
type spanRunner struct {
	fakeRunner
	got trace.SpanContext
}

func (r *spanRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	r.got = trace.SpanContextFromContext(ctx)
	return r.fakeRunner.Run(ctx, req)
}

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan   = "00f067aa0ba902b7"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
)

// TestRunSpan: a run_python call is a server span whose parent is the
// trace context of the request's _meta; the run (and so its tool calls)
// happens inside it; it says the session, the outcome and sizes, never
// the code or the output.
func TestRunSpan(t *testing.T) {
	rec := tracingtest.New(t)
	r := &spanRunner{fakeRunner: fakeRunner{result: &python.Result{Stdout: "s3cr3t-output\n", StdoutBytes: 14, Stderr: "e", StderrBytes: 1, ExitCode: 1,
		Error: &protocol.Failure{Kind: protocol.FailException, Message: "s3cr3t-message"}}}}
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: r, Tracing: rec})))
	code := "print('s3cr3t-code')"
	params := &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": code}}
	params.Meta = mcp.Meta{"traceparent": clientParent, "tracestate": "k=v"}
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}

	span := rec.One(t, "tools/call run_python")
	if span.SpanKind() != trace.SpanKindServer {
		t.Errorf("kind %v", span.SpanKind())
	}
	if p := span.Parent(); p.TraceID().String() != clientTrace || p.SpanID().String() != clientSpan || !p.IsRemote() {
		t.Errorf("parent %v, want the client's span", p)
	}
	if r.got.SpanID() != span.SpanContext().SpanID() || r.got.TraceID().String() != clientTrace {
		t.Errorf("the run's ctx has span %v, want the run_python span %v", r.got, span.SpanContext())
	}
	if span.Status().Code != codes.Error || span.Status().Description != "exception" {
		t.Errorf("status %v", span.Status())
	}
	attrs := tracingtest.Attrs(span)
	want := map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "run_python", "gen_ai.operation.name": "execute_tool",
		"codebridge.session.id": "s1", "codebridge.run.number": int64(1), "codebridge.session.new": true,
		"codebridge.outcome": "exception", "error.type": "exception",
		"codebridge.code.bytes": int64(len(code)), "codebridge.stdout.bytes": int64(14), "codebridge.stderr.bytes": int64(1),
		"codebridge.calls": int64(0),
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, attrs[k], attrs[k], v)
		}
	}
	if attrs["mcp.protocol.version"] == "" || attrs["mcp.protocol.version"] == nil {
		t.Errorf("no mcp.protocol.version: %v", attrs)
	}
	rec.NoText(t, "s3cr3t")
}

// TestRunSpanOutcomes: a call that ran no code is traced with why, and one
// without trace context starts a trace of its own.
func TestRunSpanOutcomes(t *testing.T) {
	rec := tracingtest.New(t)
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: &fakeRunner{}, Tracing: rec})))
	call(t, cs, map[string]any{"code": "  "})
	call(t, cs, map[string]any{"code": "print(1)"})
	spans := rec.Named("tools/call run_python")
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	if a := tracingtest.Attrs(spans[0]); a["codebridge.outcome"] != "invalid_input" || a["error.type"] != "invalid_input" || a["codebridge.session.id"] != nil {
		t.Errorf("the refused call: %v", a)
	}
	if a := tracingtest.Attrs(spans[1]); a["codebridge.outcome"] != "ok" || a["error.type"] != nil || spans[1].Status().Code == codes.Error {
		t.Errorf("the run that succeeded: %v, %v", a, spans[1].Status())
	}
	for _, s := range spans {
		if s.Parent().IsValid() {
			t.Errorf("a call without _meta got parent %v", s.Parent())
		}
	}
}

// TestRunWithoutTracing: with no tracer, the run's ctx carries the client's
// trace context unchanged, for the tool calls to pass on.
func TestRunWithoutTracing(t *testing.T) {
	r := &spanRunner{}
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: r})))
	params := &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": "print(1)"}}
	params.Meta = mcp.Meta{"traceparent": clientParent}
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	if r.got.TraceID().String() != clientTrace || r.got.SpanID().String() != clientSpan {
		t.Errorf("the run's ctx has %v, want the client's span", r.got)
	}
}
