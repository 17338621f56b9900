package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context travels in an MCP request's _meta under the header
// names, unprefixed, as OpenTelemetry's MCP conventions (SEP-414) say.
// Baggage does not: it is the client's data, not codebridge's to hand to
// every server.
var w3c = propagation.TraceContext{}

// Extract returns ctx with the trace context that meta, an MCP request's
// _meta, carries (traceparent, tracestate) as its remote parent; ctx
// itself when meta carries none or an invalid one.
func Extract(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	return w3c.Extract(ctx, carrier(meta))
}

// Inject adds the trace context of ctx's span to meta, an MCP request's
// _meta, and returns it (a new map when meta is nil). A span of codebridge's
// own is passed on as the parent; with traces off, that is the client's
// span, unchanged, when the request came with one. Without a span in ctx,
// meta is returned as it was.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	w3c.Inject(ctx, carrier(meta))
	return meta
}

// carrier is a _meta map as a [propagation.TextMapCarrier]: a value that
// is not a string reads as absent.
type carrier map[string]any

func (c carrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c carrier) Set(key, value string) { c[key] = value }

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
