// Package observe turns every call's ledger row into what a platform team
// watches: a Prometheus observation, one structured access-log line, and
// (when a tracer is configured) one OpenTelemetry span with the GenAI
// semantic-convention attributes. Everything is derived from the row, so
// logs, traces, metrics and the report cannot disagree — and a row holds no
// prompt text and no key, so neither can leak through here.
package observe

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/metrics"
)

// Next takes the row after it is observed: the ledger writer.
type Next interface {
	Record(groundhog.LedgerEntry) error
}

// Recorder observes each row, then hands it to Next. Metrics, Log and
// Tracer are each optional; Next nil means the ledger is disabled. A row
// of outcome cache_rent (an explicit cache's rent of a day, which every
// replica may write and the ledger keeps once) is no call: it goes to Next
// only.
type Recorder struct {
	Next    Next
	Metrics *metrics.Metrics
	Log     *slog.Logger // one line per call at Info ("call"); nil = none
	Tracer  trace.Tracer // one span per call; nil = none
	// Access, when set, writes the call line instead of Log: the same
	// line, encoded by hand and written off the request's path.
	Access *AccessLog
}

// ObserveRent counts a storage-rent row the ledger kept in the spend
// metric (metrics.ObserveRent). Record leaves rent rows out of every
// observation: a row that several replicas may write, and the ledger keeps
// once, is counted by the one that books it.
func (o *Recorder) ObserveRent(e groundhog.LedgerEntry) {
	if o.Metrics != nil && e.Outcome == groundhog.OutcomeCacheRent {
		o.Metrics.ObserveRent(&e)
	}
}

// Record observes e and records it in Next. The row reaches Next first: its
// durability decides the response, the observations never do.
func (o *Recorder) Record(e groundhog.LedgerEntry) error { return o.RecordStages(e, nil) }

// WantsStages reports whether the pipeline stages are used: only for spans.
func (o *Recorder) WantsStages() bool { return o.Tracer != nil }

// RecordStages is Record with the call's timed pipeline stages, each a
// child span of the call's span.
func (o *Recorder) RecordStages(e groundhog.LedgerEntry, stages []groundhog.Stage) error {
	return o.RecordAt(e, stages, time.Time{})
}

// RecordAt is RecordStages for a row completed at (zero: now), the time
// its access line carries: the caller's reading spares the line one.
func (o *Recorder) RecordAt(e groundhog.LedgerEntry, stages []groundhog.Stage, at time.Time) error {
	var err error
	if o.Next != nil {
		err = o.Next.Record(e)
	}
	if e.Outcome == groundhog.OutcomeCacheRent {
		return err
	}
	if o.Metrics != nil {
		o.Metrics.Observe(&e)
	}
	if o.Access != nil {
		o.Access.RecordAt(&e, at)
	} else if o.Log != nil && o.Log.Enabled(context.Background(), slog.LevelInfo) {
		// Checked first: Attrs formats two amounts and builds 18
		// attributes, wasted when the level drops the line anyway.
		o.Log.LogAttrs(context.Background(), slog.LevelInfo, "call", Attrs(&e)...)
	}
	if o.Tracer != nil {
		Span(o.Tracer, &e, stages)
	}
	return err
}

// hashPrefix is how much of the request hash a log line carries: enough to
// find the row, short enough to read.
const hashPrefix = len("sha256:") + 16

// Attrs returns the access-log attributes of a call: who, what, how it was
// answered, what it cost. Never prompt text or keys (a row has neither).
func Attrs(e *groundhog.LedgerEntry) []slog.Attr {
	h := e.RequestHash
	if len(h) > hashPrefix {
		h = h[:hashPrefix]
	}
	return []slog.Attr{
		slog.String("tenant", e.Tenant),
		slog.String("operation", e.Operation),
		slog.String("hash", h),
		slog.String("shape", string(e.Shape)),
		slog.String("model", e.Model),
		slog.String("provider", e.Provider),
		slog.String("outcome", string(e.Outcome)),
		slog.Int("status", e.Status),
		slog.Int64("input_tokens", e.Usage.InputTokens),
		slog.Int64("cached_input_tokens", e.Usage.CachedInputTokens),
		slog.Int64("cache_write_tokens", e.Usage.CacheWriteTokens),
		slog.Int64("output_tokens", e.Usage.OutputTokens),
		slog.String("cost_usd", e.Cost.String()),
		slog.String("saved_usd", e.Saved.String()),
		slog.Float64("latency_ms", float64(e.Latency.Microseconds())/1000),
		slog.Int("attempt", e.Attempt),
		slog.Bool("in_flight", e.InFlight),
		slog.Bool("stream", e.Stream),
	}
}

// genAIOperation maps a shape to gen_ai.operation.name.
func genAIOperation(s groundhog.Shape) string {
	switch s {
	case groundhog.ShapeChat, groundhog.ShapeMessages, groundhog.ShapeConverse:
		return "chat"
	case groundhog.ShapeResponses:
		return "generate_content"
	case groundhog.ShapeEmbeddings:
		return "embeddings"
	}
	return "passthrough"
}

// genAISystem maps the provider to gen_ai.system.
func genAISystem(e *groundhog.LedgerEntry) string {
	switch {
	case e.Provider == "anthropic" || e.Shape == groundhog.ShapeMessages:
		return "anthropic"
	case e.Provider == "bedrock" || e.Shape == groundhog.ShapeConverse:
		return "aws.bedrock"
	case e.Provider == "openai" || e.Shape.Valid():
		return "openai"
	}
	return e.Provider
}

// Span records one span for the call of e, from its arrival to the end of
// its response, named "{gen_ai.operation.name} {gen_ai.request.model}" as
// the GenAI semantic conventions ask, with a child span per pipeline stage.
func Span(t trace.Tracer, e *groundhog.LedgerEntry, stages []groundhog.Stage) {
	op := genAIOperation(e.Shape)
	name := op
	if e.Model != "" {
		name += " " + e.Model
	}
	ctx, span := t.Start(context.Background(), name, trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindServer))
	// One child span per pipeline stage the call went through (admit,
	// idempotency, cache, upstream), with the stage's own times.
	for _, st := range stages {
		_, child := t.Start(ctx, st.Name, trace.WithTimestamp(st.Start))
		child.End(trace.WithTimestamp(st.End))
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.system", genAISystem(e)),
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.request.model", e.Model),
		attribute.Int64("gen_ai.usage.input_tokens", e.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", e.Usage.OutputTokens),
		attribute.Int("http.response.status_code", e.Status),
		attribute.String("groundhog.outcome", string(e.Outcome)),
		attribute.String("groundhog.request_hash", e.RequestHash),
		attribute.String("groundhog.operation", e.Operation),
		attribute.String("groundhog.tenant", e.Tenant),
		attribute.String("groundhog.cost_usd", e.Cost.String()),
		attribute.String("groundhog.saved_usd", e.Saved.String()),
		attribute.Int("groundhog.attempt", e.Attempt),
	}
	if metrics.Route(e) != "" {
		// What groundhog itself spent on the call: groundhog_overhead_seconds's figure.
		attrs = append(attrs, attribute.Float64("groundhog.overhead_ms", float64(metrics.Overhead(e))/1e6))
	}
	if e.Usage.CachedInputTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.cache_read_input_tokens", e.Usage.CachedInputTokens))
	}
	if e.Usage.CacheWriteTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.cache_creation_input_tokens", e.Usage.CacheWriteTokens))
	}
	span.SetAttributes(attrs...)
	if e.Status >= 500 || e.Outcome == groundhog.OutcomeError {
		span.SetStatus(codes.Error, string(e.Outcome))
	}
	span.End(trace.WithTimestamp(e.Time.Add(max(e.Latency, time.Duration(0)))))
}
