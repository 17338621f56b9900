package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/tracing"
	"github.com/codebridge-mcp/codebridge/bridge/tracing/tracingtest"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// metaServer is an MCP server over streamable HTTP on loopback whose tool
// "echo" answers with its message and records the _meta of each call.
type metaServer struct {
	url string
	mu  sync.Mutex
	got []mcp.Meta
}

func newMetaServer(t *testing.T) *metaServer {
	t.Helper()
	m := &metaServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "meta"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		m.mu.Lock()
		m.got = append(m.got, req.Params.GetMeta())
		m.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message + "-result"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	m.url = ts.URL
	return m
}

func (m *metaServer) metas() []mcp.Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mcp.Meta(nil), m.got...)
}

// tracedDirectory is a directory over a real pool, both tracing to tp
// (nil: neither).
func tracedDirectory(t *testing.T, tp trace.TracerProvider, servers ...*discovery.Server) *Directory {
	t.Helper()
	p := pool.New(pool.Options{Tracing: tp})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	cfg := &discovery.Config{Servers: servers}
	p.Update(cfg.Servers)
	d := New(p, Options{MaxArgs: 4 << 20, Tracing: tp})
	d.Update(cfg)
	return d
}

// TestToolCallSpans: a tool call from code is a client span in the run's
// trace, named for the tool, with the server, sizes and outcome; the
// server's start is a span inside it; the downstream server gets the tool
// call's span as its parent in _meta; and no span says what the call sent
// or got.
func TestToolCallSpans(t *testing.T) {
	rec := tracingtest.New(t)
	srv := newMetaServer(t)
	d := tracedDirectory(t, rec, &discovery.Server{Name: "meta", Transport: discovery.Streamable, URL: srv.url})
	h := d.host(Run{Session: "sess1", Run: 2})

	ctx, run := rec.Tracer("test").Start(t.Context(), "run")
	raw := `{"server":"meta","tool":"echo","arguments":{"message":"s3cr3t-argument"}}`
	if _, err := h.Call(ctx, "call_tool", []byte(raw)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(ctx, "call_tool", []byte(`{"server":"meta","tool":"nope","arguments":{"message":"s3cr3t-argument"}}`)); err == nil {
		t.Fatal("an unknown tool was called")
	}
	run.End()

	call := rec.One(t, "tools/call echo")
	if call.Parent().SpanID() != run.SpanContext().SpanID() || call.SpanContext().TraceID() != run.SpanContext().TraceID() {
		t.Errorf("the tool call's parent is %v, want the run's span %v", call.Parent(), run.SpanContext())
	}
	if call.SpanKind() != trace.SpanKindClient || call.Status().Code == codes.Error {
		t.Errorf("kind %v, status %v", call.SpanKind(), call.Status())
	}
	attrs := tracingtest.Attrs(call)
	want := map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"codebridge.server": "meta", "codebridge.session.id": "sess1", "codebridge.run.number": int64(2),
		"codebridge.request.bytes": int64(len(`{"message":"s3cr3t-argument"}`)), "codebridge.outcome": "ok",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, attrs[k], attrs[k], v)
		}
	}
	if n, _ := attrs["codebridge.result.bytes"].(int64); n == 0 {
		t.Errorf("no result size: %v", attrs)
	}
	if _, ok := attrs["error.type"]; ok {
		t.Errorf("a call that succeeded has error.type: %v", attrs)
	}

	start := rec.One(t, "mcp_server.start")
	if start.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the server's start is not inside the call that started it: parent %v", start.Parent())
	}
	if a := tracingtest.Attrs(start); a["codebridge.server"] != "meta" || a["codebridge.server.transport"] != "streamable-http" || a["codebridge.outcome"] != "ok" {
		t.Errorf("start attributes %v", a)
	}

	refused := rec.Named("tools/call nope")
	if len(refused) != 1 {
		t.Fatalf("%d spans of the refused call", len(refused))
	}
	if a := tracingtest.Attrs(refused[0]); a["error.type"] != "unknown_tool" || refused[0].Status().Code != codes.Error || refused[0].Status().Description != "unknown_tool" {
		t.Errorf("the refused call: %v, %v", a, refused[0].Status())
	}

	metas := srv.metas()
	if len(metas) != 1 {
		t.Fatalf("the server got %d calls", len(metas))
	}
	ctxAtServer := tracing.Extract(t.Context(), metas[0])
	if got := trace.SpanContextFromContext(ctxAtServer); got.TraceID() != run.SpanContext().TraceID() || got.SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the server got trace context %v, want the tool call's span %v", metas[0], call.SpanContext())
	}
	rec.NoText(t, "s3cr3t")
}

// TestTraceContextWithTracingOff: with no tracer, the trace context the
// run's ctx carries (the client's, from run_python's _meta) reaches the
// downstream server unchanged.
func TestTraceContextWithTracingOff(t *testing.T) {
	srv := newMetaServer(t)
	d := tracedDirectory(t, nil, &discovery.Server{Name: "meta", Transport: discovery.Streamable, URL: srv.url})
	h := d.host(Run{Session: "s", Run: 1})
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := tracing.Extract(t.Context(), map[string]any{"traceparent": parent, "tracestate": "k=v"})
	if _, err := h.Call(ctx, "call_tool", []byte(`{"server":"meta","tool":"echo","arguments":{"message":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	// And without any, nothing is added.
	if _, err := h.Call(t.Context(), "call_tool", []byte(`{"server":"meta","tool":"echo","arguments":{"message":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	metas := srv.metas()
	if len(metas) != 2 || metas[0]["traceparent"] != parent || metas[0]["tracestate"] != "k=v" {
		t.Fatalf("the server got %v", metas)
	}
	if _, ok := metas[1]["traceparent"]; ok {
		t.Errorf("a call without trace context sent %v", metas[1])
	}
}
