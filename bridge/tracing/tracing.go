// Package tracing sends OpenTelemetry traces of what codebridge does (each
// run_python call, each tool call from code, sandbox and server starts,
// sign-ins) to an OTLP collector. It is configured only by the standard
// OTEL_* environment variables and is off unless they name an exporter or
// an endpoint; off, its tracer provider is OpenTelemetry's no-op one. It also
// carries W3C trace context (traceparent, tracestate) in the _meta of MCP
// requests, in both directions, whether or not traces are sent.
//
// docs/observability.md lists every span and attribute.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is codebridge's tracer provider: the SDK's, exporting over
// OTLP (HTTP or gRPC), when the environment configures it; else the no-op
// one. A nil *Provider is off.
type Provider struct {
	tp  trace.TracerProvider
	sdk *sdktrace.TracerProvider // nil when off
}

// Options configure [New].
type Options struct {
	Version string       // codebridge's: the resource's service.version
	Logger  *slog.Logger // nil discards; export failures are logged as warnings
}

// The variables [New] reads itself; the OTLP exporter and the SDK read the
// others (endpoint, headers, timeout, sampler, batching).
const (
	envDisabled       = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// ServiceName is the service.name of codebridge's traces unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const ServiceName = "codebridge"

// New returns the tracer provider the process's environment asks for.
// Traces are sent when OTEL_TRACES_EXPORTER is otlp or an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless
// OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none; over
// OTLP/HTTP unless OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is grpc. A value
// codebridge cannot honour (another exporter or protocol, an endpoint that
// is not a URL) is an error that says what to set instead. Stop a provider
// that sends with [Provider.Shutdown].
func New(ctx context.Context, opts Options) (*Provider, error) {
	proto, err := protocol()
	if err != nil || proto == "" {
		return &Provider{tp: noop.NewTracerProvider()}, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The SDK and the exporter report what goes wrong later (a collector
	// that does not answer, a bad sampler) to OpenTelemetry's one global
	// handler, which by default writes to stderr.
	otel.SetErrorHandler(errorLog(logger))
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	// Later sources win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(opts.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if errors.Is(err, resource.ErrPartialResource) {
		logger.Warn("OTEL_RESOURCE_ATTRIBUTES is partly invalid; traces carry the valid part", "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("the traces' resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	logger.Info("sending traces over OTLP", "protocol", proto, "endpoint", endpoint(proto))
	return &Provider{tp: sdk, sdk: sdk}, nil
}

// protocol is how the environment asks for traces to be sent
// (http/protobuf, http/json or grpc), "" for not at all; or why it asks
// for what codebridge cannot do.
func protocol() (string, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(envDisabled)), "true") {
		return "", nil
	}
	otlp := false
	if v := os.Getenv(envExporter); v != "" {
		for name := range strings.SplitSeq(v, ",") {
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "none":
				return "", nil
			case "otlp":
				otlp = true
			default:
				return "", fmt.Errorf("%s=%s: codebridge sends traces only over OTLP: set it to otlp, or to none to send none", envExporter, v)
			}
		}
	}
	for _, key := range []string{envTracesEndpoint, envEndpoint} {
		v := os.Getenv(key)
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("%s is not an http or https URL: set it to the collector's OTLP address, e.g. http://127.0.0.1:4318", key)
		}
		otlp = true
	}
	if !otlp {
		return "", nil
	}
	key := envTracesProtocol // the traces' own setting wins
	if os.Getenv(key) == "" {
		key = envProtocol
	}
	switch v := os.Getenv(key); v {
	case "":
		return "http/protobuf", nil
	case "http/protobuf", "http/json", "grpc":
		return v, nil
	default:
		return "", fmt.Errorf("%s=%s: set it to http/protobuf (the default), http/json or grpc", key, v)
	}
}

// endpoint is where traces sent by proto go, for the log: scheme, host and
// path only (the URL's user and query could hold a secret).
func endpoint(proto string) string {
	v, traces := os.Getenv(envTracesEndpoint), true
	if v == "" {
		v, traces = os.Getenv(envEndpoint), false
	}
	switch {
	case v == "" && proto == "grpc":
		return "http://localhost:4317"
	case v == "":
		return "http://localhost:4318/v1/traces"
	}
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	path := u.Path
	if !traces && proto != "grpc" {
		path = strings.TrimSuffix(path, "/") + "/v1/traces"
	}
	return u.Scheme + "://" + u.Host + path
}

// errorLog logs OpenTelemetry's errors: export failures repeat every few
// seconds while a collector is down, so one a minute at most.
func errorLog(logger *slog.Logger) otel.ErrorHandler {
	var (
		mu   sync.Mutex
		last time.Time
	)
	return otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		quiet := time.Since(last) < time.Minute
		if !quiet {
			last = time.Now()
		}
		mu.Unlock()
		if !quiet {
			logger.Warn("tracing: the OpenTelemetry SDK failed (codebridge goes on; this repeats at most once a minute)", "err", err)
		}
	})
}

// TracerProvider is the provider to take tracers from: never nil.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Sending reports whether traces are exported.
func (p *Provider) Sending() bool { return p != nil && p.sdk != nil }

// Shutdown sends the spans still buffered and stops the exporter, within
// ctx; a provider that sends nothing has nothing to do.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Sending() {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("sending the last traces: %w", err)
	}
	return nil
}
