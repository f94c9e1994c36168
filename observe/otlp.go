package observe

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/groundhog-ai/groundhog/config"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// OTLP starts exporting spans over OTLP/HTTP to endpoint (a URL such as
// http://127.0.0.1:4318, or host:port meaning http). It returns the tracer
// and a shutdown that flushes the spans still batched.
func OTLP(ctx context.Context, endpoint, version string) (trace.Tracer, func(context.Context) error, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, nil, fmt.Errorf("otlp endpoint %q: want http(s)://host:port", config.RedactUserinfo(endpoint))
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, nil, fmt.Errorf("otlp exporter: %w", err)
	}
	tp := NewProvider(sdktrace.WithBatcher(exp), version)
	return tp.Tracer("github.com/groundhog-ai/groundhog"), tp.Shutdown, nil
}

// NewProvider returns a tracer provider for groundhog's spans with the
// given span processor option (tests pass an in-memory exporter).
func NewProvider(processor sdktrace.TracerProviderOption, version string) *sdktrace.TracerProvider {
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("groundhog"), semconv.ServiceVersion(version))
	return sdktrace.NewTracerProvider(processor, sdktrace.WithResource(res))
}
