package tracing

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// The variables New reads, cleared for each case: the machine running the
// tests may set some.
var otelVars = []string{envDisabled, envExporter, envEndpoint, envTracesEndpoint, envProtocol, envTracesProtocol}

func TestNewFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		sending bool
		err     string // in the error, if any
	}{
		{name: "nothing set", env: nil},
		{name: "endpoint", env: map[string]string{envEndpoint: "http://127.0.0.1:4318"}, sending: true},
		{name: "traces endpoint", env: map[string]string{envTracesEndpoint: "https://collector.example/v1/traces"}, sending: true},
		{name: "exporter otlp alone", env: map[string]string{envExporter: "otlp"}, sending: true},
		{name: "exporter none", env: map[string]string{envExporter: "none", envEndpoint: "http://127.0.0.1:4318"}},
		{name: "sdk disabled", env: map[string]string{envDisabled: "TRUE", envEndpoint: "http://127.0.0.1:4318"}},
		{name: "sdk disabled false", env: map[string]string{envDisabled: "false", envEndpoint: "http://127.0.0.1:4318"}, sending: true},
		{name: "grpc", env: map[string]string{envEndpoint: "http://127.0.0.1:4317", envProtocol: "grpc"}, sending: true},
		{name: "http/json", env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envTracesProtocol: "http/json"}, sending: true},
		{name: "traces protocol wins", env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envProtocol: "thrift", envTracesProtocol: "http/protobuf"}, sending: true},
		{name: "unknown protocol", env: map[string]string{envEndpoint: "http://127.0.0.1:4318", envProtocol: "thrift"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL=thrift: set it to http/protobuf"},
		{name: "other exporter", env: map[string]string{envExporter: "zipkin"}, err: "OTEL_TRACES_EXPORTER=zipkin: codebridge sends traces only over OTLP"},
		{name: "endpoint without scheme", env: map[string]string{envEndpoint: "127.0.0.1:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT is not an http or https URL"},
		{name: "protocol without exporter", env: map[string]string{envProtocol: "grpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range otelVars {
				t.Setenv(k, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p, err := New(t.Context(), Options{Version: "test"})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			if p.Sending() != tt.sending {
				t.Errorf("sending %v, want %v", p.Sending(), tt.sending)
			}
			if p.TracerProvider() == nil {
				t.Error("no tracer provider")
			}
		})
	}
}

func TestEndpointForTheLog(t *testing.T) {
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	t.Setenv(envEndpoint, "https://user:secret@collector.example:4318/base/?token=x")
	if got, want := endpoint("http/protobuf"), "https://collector.example:4318/base/v1/traces"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := endpoint("grpc"), "https://collector.example:4318/base/"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNilProvider(t *testing.T) {
	var p *Provider
	if p.Sending() || p.Shutdown(t.Context()) != nil || p.TracerProvider() == nil {
		t.Error("a nil provider is not off")
	}
}

const (
	parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	state  = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

func TestExtractInject(t *testing.T) {
	ctx := Extract(t.Context(), map[string]any{"traceparent": parent, "tracestate": state, "baggage": "user=alice", "other": 1})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("extracted %+v", sc)
	}
	// With traces off, the client's context goes on unchanged, baggage not.
	meta := Inject(ctx, map[string]any{"keep": "me"})
	if meta["traceparent"] != parent || meta["tracestate"] != state || meta["keep"] != "me" || meta["baggage"] != nil {
		t.Errorf("injected %v", meta)
	}
	if meta := Inject(ctx, nil); meta["traceparent"] != parent {
		t.Errorf("injected into nil: %v", meta)
	}

	for _, bad := range []map[string]any{nil, {}, {"traceparent": 7}, {"traceparent": "00-zz-00f067aa0ba902b7-01"}} {
		ctx := Extract(t.Context(), bad)
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("extracted a span context from %v", bad)
		}
		if meta := Inject(ctx, nil); meta != nil {
			t.Errorf("injected %v without a span", meta)
		}
	}
}
