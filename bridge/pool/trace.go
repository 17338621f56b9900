package pool

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/tracing"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// attrTransport is how codebridge reaches a server it starts: stdio,
// streamable-http or sse.
const attrTransport = attribute.Key("codebridge.server.transport")

// describeStart sets the attributes of the span of def's start, which
// ended with err: timeout when it did not answer initialize in time,
// server_failed when it failed otherwise.
func describeStart(span trace.Span, def *discovery.Server, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.Server.String(def.Name), attrTransport.String(string(def.Transport)))
	outcome := tracing.OK
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "timeout"
	case err != nil:
		outcome = "server_failed"
	}
	tracing.SetOutcome(span, outcome)
}
