// Package ledgertest generates a deterministic workload of model calls —
// repeats, concurrent identical calls, several operations, tenants, shapes
// and days, unknown models — as a request log for ledger.Analyze and as the
// ledger rows a gateway would have written for the same calls, so that the
// offline and the live report can be checked against each other.
package ledgertest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/pricing"
)

// Options shape a workload. Zero values take the defaults.
type Options struct {
	Calls            int           // default 10,000
	Start            time.Time     // first call; default 2025-03-14T00:00:00Z
	Span             time.Duration // the time the calls spread over; default 72h, so every time zone sees day boundaries
	RepeatRate       float64       // share of calls that re-send an earlier request (default 0.15)
	ConcurrentRate   float64       // share of repeats that re-send one of the last few calls, often still in flight (default 0.3)
	UnknownModelRate float64       // share of new requests to a model missing from the price table (default 0.01)
	CostRate         float64       // share of lines that carry cost_usd instead of being priced from usage (default 0.2)
	ShuffleRate      float64       // share of log lines written before their predecessor, out of time order (default 0.05)
	Tenants          []string
	Seed             uint64
}

func (o *Options) defaults() {
	if o.Calls == 0 {
		o.Calls = 10_000
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	}
	if o.Span == 0 {
		o.Span = 72 * time.Hour
	}
	if o.RepeatRate == 0 {
		o.RepeatRate = 0.15
	}
	if o.ConcurrentRate == 0 {
		o.ConcurrentRate = 0.3
	}
	if o.UnknownModelRate == 0 {
		o.UnknownModelRate = 0.01
	}
	if o.CostRate == 0 {
		o.CostRate = 0.2
	}
	if o.ShuffleRate == 0 {
		o.ShuffleRate = 0.05
	}
	if len(o.Tenants) == 0 {
		o.Tenants = []string{"acme", "globex", ""}
	}
}

// Call is one generated model call.
type Call struct {
	Time      time.Time
	Operation string
	Tenant    string // "" means the log line has no tenant (groundhog.LocalTenant)
	Shape     groundhog.Shape
	Request   []byte
	Model     string
	Usage     groundhog.Usage
	CostUSD   string // exact decimal written as cost_usd, "" when the line carries none
	Duration  time.Duration
	// ShapeField says how the log line names the shape: "shape", "path" or
	// "" (inferred from the request).
	ShapeField string
}

// operations of the workload, each with its shape and models.
var operations = []struct {
	name   string
	shape  groundhog.Shape
	models []string
}{
	{"summarize", groundhog.ShapeChat, []string{"gpt-4o-mini", "gpt-4o"}},
	{"extract", groundhog.ShapeResponses, []string{"gpt-4.1-mini", "gpt-4.1"}},
	{"agent", groundhog.ShapeMessages, []string{"claude-sonnet-4-5", "claude-haiku-4-5"}},
	{"embed", groundhog.ShapeEmbeddings, []string{"text-embedding-3-small"}},
}

// UnknownModel is the model of the requests that have no price.
const UnknownModel = "acme-internal-7b"

// request is a distinct request of the workload; repeats re-send it.
type request struct {
	op      int
	tenant  string
	model   string
	id      int
	variant int
}

// Generate calls fn for every call of the workload in time order (strictly
// increasing times). The same Options always give the same calls. fn must
// not keep c.
func Generate(o Options, fn func(c *Call) error) error {
	o.defaults()
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	gap := int64(o.Span) / int64(o.Calls)
	t := o.Start.UnixNano()
	var history []request // distinct requests so far
	var recent []request  // the last calls, for concurrent repeats
	var c Call
	for i := 0; i < o.Calls; i++ {
		var r request
		step := 1 + rng.Int64N(2*gap+1)
		if len(history) > 0 && rng.Float64() < o.RepeatRate {
			if rng.Float64() < o.ConcurrentRate && len(recent) > 0 {
				// A retry or a second worker: one of the last two calls
				// again, within 50 ms, while it is most likely running.
				r = recent[len(recent)-1-rng.IntN(min(2, len(recent)))]
				step = 1 + rng.Int64N(int64(50*time.Millisecond))
			} else {
				r = history[rng.IntN(len(history))]
			}
			// Repeats are spelled differently (key order, whitespace):
			// the fingerprint must still see the same request.
			r.variant = rng.IntN(3)
		} else {
			op := rng.IntN(len(operations))
			models := operations[op].models
			r = request{op: op, tenant: o.Tenants[rng.IntN(len(o.Tenants))], model: models[rng.IntN(len(models))], id: len(history)}
			if operations[op].shape != groundhog.ShapeMessages && rng.Float64() < o.UnknownModelRate {
				r.model = UnknownModel
			}
			history = append(history, r)
		}
		t += step
		recent = append(recent, r)
		if len(recent) > 8 {
			recent = recent[1:]
		}
		op := operations[r.op]
		c = Call{
			Time:      time.Unix(0, t).UTC(),
			Operation: op.name,
			Tenant:    r.tenant,
			Shape:     op.shape,
			Model:     r.model,
			Request:   body(op.shape, r),
			Duration:  time.Duration(100+rng.IntN(4000)) * time.Millisecond,
		}
		in := int64(len(c.Request)/4 + rng.IntN(50))
		c.Usage = groundhog.Usage{InputTokens: in, OutputTokens: int64(rng.IntN(600))}
		if op.shape == groundhog.ShapeEmbeddings {
			c.Usage.OutputTokens = 0
		}
		if op.shape == groundhog.ShapeMessages && rng.IntN(2) == 0 {
			c.Usage.CachedInputTokens = in / 2
		}
		if rng.Float64() < o.CostRate {
			c.CostUSD = "0." + fmt.Sprintf("%06d", 1+rng.IntN(20000))
		}
		switch rng.IntN(3) {
		case 0:
			c.ShapeField = "shape"
		case 1:
			c.ShapeField = "path"
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// body renders request r of shape sh; variants differ only in spelling.
func body(sh groundhog.Shape, r request) []byte {
	doc := fmt.Sprintf("Document %d of the quarterly filings: revenue, margins, outlook. ", r.id)
	var s string
	switch sh {
	case groundhog.ShapeChat:
		s = fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"You summarize filings."},{"role":"user","content":%q}],"temperature":0.2}`, r.model, doc+doc)
		if r.variant == 1 {
			s = fmt.Sprintf(`{"temperature": 0.20, "messages": [{"content": "You summarize filings.", "role": "system"}, {"content": %q, "role": "user"}], "model": %q, "stream": true}`, doc+doc, r.model)
		}
	case groundhog.ShapeResponses:
		s = fmt.Sprintf(`{"model":%q,"instructions":"Extract the revenue.","input":%q,"max_output_tokens":200}`, r.model, doc)
		if r.variant == 1 {
			s = fmt.Sprintf(`{ "input": %q, "max_output_tokens": 2e2, "instructions": "Extract the revenue.", "model": %q }`, doc, r.model)
		}
	case groundhog.ShapeMessages:
		s = fmt.Sprintf(`{"model":%q,"max_tokens":1024,"system":"You are a careful analyst.","messages":[{"role":"user","content":%q}]}`, r.model, doc)
		if r.variant == 1 {
			s = fmt.Sprintf(`{"messages":[{"content":%q,"role":"user"}],"system":"You are a careful analyst.","max_tokens":1024.0,"model":%q,"stream":false}`, doc, r.model)
		}
	case groundhog.ShapeEmbeddings:
		// The official SDKs send encoding_format; it also tells an
		// embeddings request of an unknown model from a responses one.
		s = fmt.Sprintf(`{"model":%q,"input":%q,"encoding_format":"float"}`, r.model, doc)
		if r.variant == 1 {
			s = fmt.Sprintf(`{"encoding_format":"float","input":%q,  "model":%q}`, doc, r.model)
		}
	}
	return []byte(s)
}

var paths = map[groundhog.Shape]string{
	groundhog.ShapeChat:       "/v1/chat/completions",
	groundhog.ShapeResponses:  "/v1/responses",
	groundhog.ShapeMessages:   "/v1/messages",
	groundhog.ShapeEmbeddings: "/v1/embeddings",
}

// AppendJSONL appends c as one request-log line (with its newline) in the
// format ledger.Analyze reads. Usage is written in the provider's own form
// (OpenAI chat, OpenAI responses, Anthropic).
func AppendJSONL(dst []byte, c *Call) []byte {
	dst = append(dst, `{"timestamp":"`...)
	dst = c.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","operation":`...)
	dst = strconv.AppendQuote(dst, c.Operation)
	if c.Tenant != "" {
		dst = append(dst, `,"tenant":`...)
		dst = strconv.AppendQuote(dst, c.Tenant)
	}
	switch c.ShapeField {
	case "shape":
		dst = append(dst, `,"shape":"`...)
		dst = append(dst, c.Shape...)
		dst = append(dst, '"')
	case "path":
		dst = append(dst, `,"path":"`...)
		dst = append(dst, paths[c.Shape]...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"request":`...)
	dst = append(dst, c.Request...)
	u := c.Usage
	switch c.Shape {
	case groundhog.ShapeChat, groundhog.ShapeEmbeddings:
		dst = fmt.Appendf(dst, `,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
			u.InputTokens, u.OutputTokens, u.InputTokens+u.OutputTokens, u.CachedInputTokens)
	case groundhog.ShapeResponses:
		dst = fmt.Appendf(dst, `,"usage":{"input_tokens":%d,"output_tokens":%d,"input_tokens_details":{"cached_tokens":%d}}`,
			u.InputTokens, u.OutputTokens, u.CachedInputTokens)
	case groundhog.ShapeMessages:
		dst = fmt.Appendf(dst, `,"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}`,
			u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, u.OutputTokens, u.CachedInputTokens, u.CacheWriteTokens)
	}
	if c.CostUSD != "" {
		dst = append(dst, `,"cost_usd":`...)
		dst = append(dst, c.CostUSD...)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, c.Duration.Milliseconds(), 10)
	return append(dst, "}\n"...)
}

// WriteJSONL writes the workload as a request log. A share o.ShuffleRate of
// lines is written just before the line that precedes it in time, as a log
// written at completion would be. It returns the bytes written.
func WriteJSONL(w io.Writer, o Options) (int64, error) {
	o.defaults()
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(o.Seed, 1))
	var held []byte // the previous line, kept back so the next can jump ahead of it
	var line []byte
	var n int64
	write := func(b []byte) error {
		k, err := bw.Write(b)
		n += int64(k)
		return err
	}
	err := Generate(o, func(c *Call) error {
		line = AppendJSONL(line[:0], c)
		if held != nil && rng.Float64() < o.ShuffleRate {
			if err := write(line); err != nil {
				return err
			}
			err := write(held)
			held = nil
			return err
		}
		if held != nil {
			if err := write(held); err != nil {
				return err
			}
		}
		held = append(held[:0:0], line...)
		return nil
	})
	if err != nil {
		return n, err
	}
	if held != nil {
		if err := write(held); err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// LedgerRows calls fn with the ledger rows a gateway with its cache off
// would have written for the workload, in batches of up to batch rows: one
// upstream row per call, hashed by fingerprint.Compute like the gateway,
// priced like Analyze (cost_usd, else prices for usage, else unknown), and
// InFlight when an identical call (same tenant and hash) started earlier and
// had not finished. IDs are increasing, so (Time, ID) order is time order.
func LedgerRows(o Options, prices pricing.Table, batch int, fn func(rows []groundhog.LedgerEntry) error) error {
	o.defaults()
	type key struct{ tenant, hash string }
	until := map[key]int64{}
	rows := make([]groundhog.LedgerEntry, 0, batch)
	n := 0
	err := Generate(o, func(c *Call) error {
		n++
		tenant := c.Tenant
		if tenant == "" {
			tenant = groundhog.LocalTenant
		}
		fp, err := fingerprint.Compute(fingerprint.Params{Shape: c.Shape, Tenant: tenant}, c.Request)
		if err != nil {
			return fmt.Errorf("call %d: %w", n, err)
		}
		cost := prices.Cost(fp.Model, c.Usage)
		if c.CostUSD != "" {
			if cost, err = groundhog.ParseMoney(c.CostUSD); err != nil {
				return err
			}
		}
		t := c.Time.UnixNano()
		k := key{tenant, fp.Hash}
		end, seen := until[k]
		if !seen || t+int64(c.Duration.Truncate(time.Millisecond)) > end {
			until[k] = t + int64(c.Duration.Truncate(time.Millisecond))
		}
		rows = append(rows, groundhog.LedgerEntry{
			ID:          fmt.Sprintf("%016d", n),
			Time:        c.Time,
			Tenant:      tenant,
			Operation:   c.Operation,
			RequestHash: fp.Hash,
			Shape:       c.Shape,
			Model:       fp.Model,
			Provider:    c.Shape.Provider(),
			Outcome:     groundhog.OutcomeUpstream,
			Status:      200,
			Usage:       c.Usage,
			Cost:        cost,
			FullCost:    cost,
			Latency:     c.Duration,
			Attempt:     1,
			InFlight:    seen && t < end,
			Stream:      fp.Stream,

			PromptCacheSaved: prices.PromptCacheSaving(fp.Model, c.Usage),
		})
		if len(rows) == batch {
			if err := fn(rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		return fn(rows)
	}
	return nil
}
