package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/pricing"
)

// AnalyzeOptions configure Analyze.
type AnalyzeOptions struct {
	// Location sets the day boundaries; nil means UTC.
	Location *time.Location
	// Prices prices lines that carry usage but no cost_usd; nil means
	// pricing.Default().
	Prices pricing.Table
	// SkipBad counts bad lines in AnalyzeStats and goes on, instead of
	// stopping at the first one with a *LineError.
	SkipBad bool
	// Progress, if set, is called with the number of input bytes consumed
	// since its previous call, about every megabyte and once at the end
	// (for a progress bar).
	Progress func(bytes int64)
	// Shape is the API shape of lines that name none (no "shape" or "path"
	// field). Empty infers it from the request body; see Analyze.
	Shape groundhog.Shape
	// ReorderWindow is how far back in time a line may be relative to the
	// latest line before it (logs written at completion are out of order by
	// up to a call's duration). Lines are re-sorted within this window;
	// memory holds the lines of one window. Zero means 5 minutes; a negative
	// value requires a sorted file.
	ReorderWindow time.Duration
}

// DefaultReorderWindow is the ReorderWindow used when none is given.
const DefaultReorderWindow = 5 * time.Minute

// AnalyzeStats describes what Analyze read.
type AnalyzeStats struct {
	Lines   int64 // lines read, blank and bad ones included
	Bytes   int64 // bytes read
	Calls   int64 // lines counted as calls
	Skipped int64 // bad lines skipped (SkipBad)
	// FirstSkipped is the error of the first skipped line, nil if none.
	FirstSkipped *LineError
}

// LineError is a bad input line: which one, and what is wrong with it.
type LineError struct {
	Line int64 // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// maxLineSize bounds one input line, so a file without newlines cannot
// exhaust memory. Requests carrying images can be tens of megabytes.
const maxLineSize = 256 << 20

// Analyze computes the duplicate-work report of a request log that never
// went through groundhog, so a team can measure before routing anything. It
// returns one report per calendar day (in o.Location) that has calls, in
// day order.
//
// The input is JSON Lines, one call a line:
//
//		{"timestamp": "2025-03-14T09:26:53.589Z", "operation": "summarize", "tenant": "acme",
//		 "request": {...provider request body...}, "usage": {...}, "cost_usd": 0.004, "duration_ms": 812}
//
//	  - timestamp (required): an RFC 3339 string, or a number of unix seconds
//	    (milliseconds if above 1e11).
//	  - operation: the report row (empty if missing); tenant: the tenant scope
//	    of the hash (groundhog.LocalTenant if missing, as in the gateway's
//	    single-tenant mode).
//	  - request (required): the provider request body, fingerprinted with
//	    fingerprint.Compute exactly as the gateway does (no declared versions).
//	    Its shape comes from a "shape" field (chat, responses, embeddings,
//	    messages) or a "path" field ending in /chat/completions, /responses,
//	    /embeddings or /messages, else from o.Shape, else it is inferred:
//	    "messages" with a top-level "system" or a claude model is messages,
//	    other "messages" chat; "input" with an embedding model (name contains
//	    "embed") or "encoding_format"/"dimensions" is embeddings, other
//	    "input" responses.
//	  - usage: OpenAI chat (prompt_tokens, completion_tokens,
//	    prompt_tokens_details.cached_tokens), OpenAI responses (input_tokens,
//	    output_tokens, input_tokens_details.cached_tokens), Anthropic
//	    (input_tokens, output_tokens, cache_read_input_tokens,
//	    cache_creation_input_tokens; input is then the sum) or groundhog's own
//	    Usage fields.
//	  - cost_usd: the call's cost in dollars, exact (decimal, no float).
//	  - duration_ms: how long the call took.
//
// Each line becomes a ledger row — outcome upstream, CacheOn false (a call
// made without groundhog: repeats count as shadow savings), Cost = FullCost
// = cost_usd if present, else the price of the request's model for usage if
// usage is present, else unknown; InFlight when the line's timestamp is
// before an earlier identical call's timestamp plus its duration_ms — and is
// counted by the same Accumulator as BuildReport.
//
// Lines are ordered by (timestamp, line number). The file need not be
// sorted, but no line may be more than o.ReorderWindow earlier than a line
// before it. The input is streamed: lines are parsed and fingerprinted on
// GOMAXPROCS workers, a megabyte at a time, and counted in input order.
// Memory is bounded by a few megabytes of input per worker, the lines of one
// reorder window and the distinct request hashes of one day — not by the
// size of the file.
//
// A bad line (invalid JSON, missing timestamp or request, a request the
// fingerprint rejects, a line too far out of order, a line over 256 MB)
// stops Analyze with a *LineError naming the line, unless o.SkipBad is set
// (the over-long line always stops it); blank lines are ignored. ctx is
// checked after every megabyte. Analyze returns only once it has stopped
// reading r.
func Analyze(ctx context.Context, r io.Reader, o AnalyzeOptions) ([]*Report, AnalyzeStats, error) {
	an := newAnalyzer(o)
	err := an.run(ctx, r)
	if err == nil {
		an.flush()
		for _, rep := range an.reports {
			if err = rep.Err(); err != nil {
				return nil, an.stats, err
			}
		}
	}
	return an.reports, an.stats, err
}

// pendingCall is a parsed line waiting in the reorder buffer.
type pendingCall struct {
	t         int64 // unix nanoseconds
	line      int64
	tenant    string
	operation string
	hash      string
	model     string
	cost      groundhog.Money
	duration  int64 // nanoseconds
	usage     groundhog.Usage
	pcSaved   groundhog.Money // prompt-cache net saving, priced from usage
}

type analyzer struct {
	o       AnalyzeOptions
	loc     *time.Location
	prices  pricing.Table
	window  int64
	stats   AnalyzeStats
	reports []*Report

	buf      reorderBuf
	maxSeen  int64 // latest timestamp read (MinInt64 before the first)
	released int64 // timestamp of the last call handed to the accumulator
	anyOut   bool

	acc              *Accumulator
	dayStart, dayEnd int64
	day              string
	inFlight         *reqMap[int64] // identical call's latest end, unix ns
	entry            groundhog.LedgerEntry
}

func newAnalyzer(o AnalyzeOptions) *analyzer {
	an := &analyzer{o: o, loc: o.Location, prices: o.Prices, inFlight: newReqMap[int64](), maxSeen: math.MinInt64}
	if an.loc == nil {
		an.loc = time.UTC
	}
	if an.prices == nil {
		an.prices = pricing.Default()
	}
	switch {
	case o.ReorderWindow == 0:
		an.window = int64(DefaultReorderWindow)
	case o.ReorderWindow > 0:
		an.window = int64(o.ReorderWindow)
	}
	return an
}

// parser turns lines into calls. Each worker has its own (the intern map
// is not shared).
type parser struct {
	shape  groundhog.Shape
	prices pricing.Table
	intern map[string]string // operation and tenant names
}

func (an *analyzer) newParser() *parser {
	return &parser{shape: an.o.Shape, prices: an.prices, intern: map[string]string{}}
}

func (p *parser) str(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	if len(p.intern) > 1<<16 {
		return string(b) // unbounded cardinality: stop interning
	}
	s := string(b)
	p.intern[s] = s
	return s
}

// chunkSize is how much of the input one worker parses at a time.
const chunkSize = 1 << 20

// chunk is a run of whole input lines and, once done is closed, what they
// parsed to.
type chunk struct {
	data      []byte
	firstLine int64 // line number of data's first line
	lines     int64
	results   []lineResult // one per non-blank line, in order
	err       error        // a read error after data
	done      chan struct{}
}

type lineResult struct {
	line int64
	call pendingCall
	err  error // the line is bad
}

// run reads r in chunks of whole lines, parses them on GOMAXPROCS workers
// and feeds the calls, in input order, to the reorder buffer. Parsing and
// fingerprinting are most of the work; the ordered part (days, repeats,
// in-flight) stays on this goroutine.
func (an *analyzer) run(ctx context.Context, r io.Reader) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	quit := make(chan struct{})
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, workers+1)
	free := make(chan []byte, workers+3)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		readChunks(r, quit, work, ordered, free)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := an.newParser()
			for c := range work {
				p.parseChunk(c)
				close(c.done)
			}
		}()
	}
	err := an.collect(ctx, ordered, free)
	close(quit)
	// Drain, so that no goroutine is left reading r once Analyze returns.
	for range ordered {
	}
	wg.Wait()
	return err
}

// collect consumes the parsed chunks in input order.
func (an *analyzer) collect(ctx context.Context, ordered <-chan *chunk, free chan<- []byte) error {
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range c.results {
			res := &c.results[i]
			err := res.err
			if err == nil {
				err = an.push(res.call)
			}
			if err != nil {
				le := &LineError{Line: res.line, Err: err}
				if !an.o.SkipBad {
					an.stats.Lines = res.line
					return le
				}
				an.stats.Skipped++
				if an.stats.FirstSkipped == nil {
					an.stats.FirstSkipped = le
				}
			}
		}
		an.stats.Lines += c.lines
		an.stats.Bytes += int64(len(c.data))
		if an.o.Progress != nil && len(c.data) > 0 {
			an.o.Progress(int64(len(c.data)))
		}
		if c.err != nil {
			return c.err
		}
		if cap(c.data) <= 2*chunkSize { // a buffer grown for a long line is let go
			select {
			case free <- c.data[:0]:
			default:
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// readChunks cuts r into chunks of whole lines (about chunkSize bytes; a
// longer line gets a chunk of its own, up to maxLineSize) and sends each
// to ordered, then to work, until EOF, a read error (sent as the last
// chunk's err) or quit.
func readChunks(r io.Reader, quit <-chan struct{}, work, ordered chan<- *chunk, free <-chan []byte) {
	defer close(work)
	defer close(ordered)
	var carry []byte // the start of a line cut by the previous chunk
	line := int64(1)
	for eof := false; !eof; {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, 0, chunkSize)
		}
		buf = append(buf[:0], carry...)
		var rerr error
		scanned := 0 // bytes of buf known to hold no newline
		for {
			for len(buf) < cap(buf) && !eof {
				n, err := r.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err == io.EOF {
					eof = true
				} else if err != nil {
					rerr, eof = fmt.Errorf("ledger: analyze: read: %w", err), true
				}
			}
			if eof || bytes.IndexByte(buf[scanned:], '\n') >= 0 {
				break
			}
			// One line fills the buffer: grow it.
			if len(buf) >= maxLineSize {
				rerr, eof = &LineError{Line: line, Err: fmt.Errorf("line longer than %d bytes", maxLineSize)}, true
				buf = buf[:0]
				break
			}
			scanned = len(buf)
			buf = slices.Grow(buf, len(buf))
		}
		end := len(buf)
		if !eof {
			end = bytes.LastIndexByte(buf, '\n') + 1
		}
		carry = append(carry[:0], buf[end:]...)
		c := &chunk{data: buf[:end], firstLine: line, err: rerr, done: make(chan struct{})}
		c.lines = int64(bytes.Count(c.data, []byte{'\n'}))
		if len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
			c.lines++
		}
		line += c.lines
		select {
		case ordered <- c:
		case <-quit:
			return
		}
		select {
		case work <- c:
		case <-quit:
			return
		}
	}
}

// parseChunk parses every line of c into c.results.
func (p *parser) parseChunk(c *chunk) {
	data, line := c.data, c.firstLine
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		b := data
		if i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		call, ok, err := p.line(b, line)
		if ok || err != nil {
			c.results = append(c.results, lineResult{line: line, call: call, err: err})
		}
		line++
	}
}

// line parses input line number n into a call; ok is false for a blank
// line.
func (p *parser) line(b []byte, n int64) (c pendingCall, ok bool, err error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return c, false, nil
	}
	c, err = p.parse(b, n)
	return c, err == nil, err
}

func (p *parser) parse(b []byte, n int64) (pendingCall, error) {
	var (
		ts, op, tenant, req, usage, cost, dur, shape, path []byte
	)
	err := scanObject(b, func(key, val []byte) error {
		switch string(key) {
		case "timestamp":
			ts = val
		case "operation":
			op = val
		case "tenant":
			tenant = val
		case "request":
			req = val
		case "usage":
			usage = val
		case "cost_usd":
			cost = val
		case "duration_ms":
			dur = val
		case "shape":
			shape = val
		case "path":
			path = val
		}
		return nil
	})
	if err != nil {
		return pendingCall{}, err
	}
	c := pendingCall{line: n}
	if ts == nil || isNull(ts) {
		return pendingCall{}, errors.New(`missing "timestamp"`)
	}
	t, err := parseTimestamp(ts)
	if err != nil {
		return pendingCall{}, err
	}
	c.t = t.UnixNano()
	if c.operation, err = p.optString("operation", op); err != nil {
		return pendingCall{}, err
	}
	if c.tenant, err = p.optString("tenant", tenant); err != nil {
		return pendingCall{}, err
	}
	if c.tenant == "" {
		c.tenant = groundhog.LocalTenant
	}
	if req == nil || isNull(req) {
		return pendingCall{}, errors.New(`missing "request"`)
	}
	sh, err := p.shapeOf(shape, path, req)
	if err != nil {
		return pendingCall{}, err
	}
	fp, err := fingerprint.Compute(fingerprint.Params{Shape: sh, Tenant: c.tenant}, req)
	if err != nil {
		return pendingCall{}, fmt.Errorf("request: %s", groundhog.ErrorMessage(err))
	}
	c.hash, c.model = fp.Hash, fp.Model
	if dur != nil && !isNull(dur) {
		ms, ok := jsonFloat(dur)
		if !ok || ms < 0 || math.IsInf(ms, 0) || ms > 1e12 {
			return pendingCall{}, fmt.Errorf(`"duration_ms" must be a non-negative number of milliseconds`)
		}
		c.duration = int64(math.Round(ms * 1e6))
	}
	// The prompt-cache figures come from usage even when cost_usd gives
	// the cost: a log line carries no saving of its own.
	c.pcSaved = p.prices.PromptCacheSaving(c.model, groundhog.Usage{})
	if usage != nil && !isNull(usage) {
		if c.usage, err = parseUsage(usage); err != nil {
			return pendingCall{}, err
		}
		c.pcSaved = p.prices.PromptCacheSaving(c.model, c.usage)
	}
	switch {
	case cost != nil && !isNull(cost):
		if c.cost, err = parseUSD(cost); err != nil {
			return pendingCall{}, err
		}
	case usage != nil && !isNull(usage):
		c.cost = p.prices.Cost(c.model, c.usage)
	default:
		c.cost = groundhog.CostUnknown
	}
	return c, nil
}

func (p *parser) optString(name string, v []byte) (string, error) {
	if v == nil || isNull(v) {
		return "", nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return p.str(v[1 : len(v)-1]), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%q must be a string", name)
	}
	return p.str([]byte(s)), nil
}

// push puts c in the reorder buffer and releases every call that no later
// line can precede any more.
func (an *analyzer) push(c pendingCall) error {
	if an.anyOut && c.t < an.released {
		return fmt.Errorf("timestamp %s is more than the reorder window (%s) before an earlier line's; sort the file by timestamp or widen the window",
			time.Unix(0, c.t).UTC().Format(time.RFC3339Nano), time.Duration(an.window))
	}
	an.stats.Calls++
	an.buf.push(&c)
	an.maxSeen = max(an.maxSeen, c.t)
	for an.buf.len() > 0 && an.buf.minTime() <= an.maxSeen-an.window {
		an.release(an.buf.pop())
	}
	return nil
}

// flush releases the whole buffer and closes the last day.
func (an *analyzer) flush() {
	for an.buf.len() > 0 {
		an.release(an.buf.pop())
	}
	an.closeDay()
}

func (an *analyzer) closeDay() {
	if an.acc != nil {
		an.reports = append(an.reports, an.acc.Report(an.day))
		an.acc = nil
	}
}

// release hands the next call, in (time, line) order, to the day's
// accumulator.
func (an *analyzer) release(c *pendingCall) {
	an.released, an.anyOut = c.t, true
	if an.acc == nil || c.t < an.dayStart || c.t >= an.dayEnd {
		an.closeDay()
		start, end := DayBounds(time.Unix(0, c.t), an.loc)
		an.dayStart, an.dayEnd = start.UnixNano(), end.UnixNano()
		an.day = start.Format("2006-01-02")
		an.acc = NewAccumulator("")
		// A call still running at midnight can make the first calls of
		// the new day in-flight; everything else is forgotten so memory
		// stays with one day's hashes.
		an.inFlight.deleteFunc(func(until int64) bool { return until <= an.dayStart })
	}
	ref := an.inFlight.ref(c.tenant, c.hash)
	until, seen := an.inFlight.get(ref)
	end := c.t + c.duration
	if !seen || end > until {
		an.inFlight.set(ref, end)
	}
	e := &an.entry
	*e = groundhog.LedgerEntry{
		Time:        time.Unix(0, c.t).UTC(),
		Tenant:      c.tenant,
		Operation:   c.operation,
		RequestHash: c.hash,
		Model:       c.model,
		Outcome:     groundhog.OutcomeUpstream,
		Cost:        c.cost,
		FullCost:    c.cost,
		Latency:     time.Duration(c.duration),
		InFlight:    seen && c.t < until,
		Usage:       c.usage,

		PromptCacheSaved: c.pcSaved,
	}
	an.acc.Add(e)
}

// shapeOf picks the shape of a line's request (see Analyze).
func (p *parser) shapeOf(shapeField, pathField, req []byte) (groundhog.Shape, error) {
	if shapeField != nil && !isNull(shapeField) {
		s, ok := plainString(shapeField)
		if !ok && json.Unmarshal(shapeField, &s) != nil {
			s = ""
		}
		if !groundhog.Shape(s).Valid() {
			return "", fmt.Errorf(`"shape" must be one of chat, responses, embeddings, messages`)
		}
		return groundhog.Shape(s), nil
	}
	if pathField != nil && !isNull(pathField) {
		p, ok := plainString(pathField)
		if !ok {
			if err := json.Unmarshal(pathField, &p); err != nil {
				return "", fmt.Errorf(`"path" must be a string`)
			}
		}
		if sh, ok := shapeForPath(p); ok {
			return sh, nil
		}
		return "", fmt.Errorf("path %q is not a provider route groundhog serves", p)
	}
	if p.shape != "" {
		return p.shape, nil
	}
	return inferShape(req), nil
}

func shapeForPath(p string) (groundhog.Shape, bool) {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimSuffix(p, "/")
	for _, r := range pathShapes {
		if strings.HasSuffix(p, r.suffix) {
			return r.shape, true
		}
	}
	return "", false
}

// pathShapes are the provider routes Analyze recognizes in a "path" field
// (no suffix is a suffix of another, so the order does not matter).
var pathShapes = [...]struct {
	suffix string
	shape  groundhog.Shape
}{
	{"/chat/completions", groundhog.ShapeChat},
	{"/responses", groundhog.ShapeResponses},
	{"/embeddings", groundhog.ShapeEmbeddings},
	{"/messages", groundhog.ShapeMessages},
}

// plainString returns the content of the JSON string v when it has no
// escapes, control characters or non-ASCII bytes (the common case, read
// without a decoder); ok is false otherwise, and the caller decodes v.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	c := v[1 : len(v)-1]
	for _, b := range c {
		if b < 0x20 || b >= 0x80 || b == '\\' || b == '"' {
			return "", false
		}
	}
	return string(c), true
}

// inferShape guesses a request's shape from its top-level fields.
func inferShape(req []byte) groundhog.Shape {
	var hasMessages, hasSystem, hasInput, embedHint bool
	var model string
	scanObject(req, func(key, val []byte) error {
		switch string(key) {
		case "messages":
			hasMessages = true
		case "system":
			hasSystem = true
		case "input":
			hasInput = true
		case "encoding_format", "dimensions":
			embedHint = true
		case "model":
			json.Unmarshal(val, &model)
		}
		return nil
	})
	switch {
	case hasMessages && (hasSystem || strings.HasPrefix(model, "claude")):
		return groundhog.ShapeMessages
	case hasMessages:
		return groundhog.ShapeChat
	case hasInput && (embedHint || strings.Contains(model, "embed")):
		return groundhog.ShapeEmbeddings
	case hasInput:
		return groundhog.ShapeResponses
	}
	return groundhog.ShapeChat
}

func isNull(v []byte) bool { return string(v) == "null" }

// parseTimestamp reads an RFC 3339 string (a space may replace the T) or a
// number of unix seconds (milliseconds above 1e11).
func parseTimestamp(v []byte) (time.Time, error) {
	if v[0] == '"' {
		s, ok := jsonString(v)
		if !ok {
			return time.Time{}, errors.New(`"timestamp" is not a valid string`)
		}
		if len(s) > 10 && s[10] == ' ' {
			s = s[:10] + "T" + s[11:]
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf(`"timestamp" %q is not RFC 3339 (2006-01-02T15:04:05Z)`, s)
		}
		return t, nil
	}
	f, ok := jsonFloat(v)
	if !ok || f < 0 || math.IsInf(f, 0) {
		return time.Time{}, errors.New(`"timestamp" must be an RFC 3339 string or unix seconds`)
	}
	if f > 1e11 {
		f /= 1000
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
}

// parseUSD reads a JSON number of dollars into exact picodollars. Decimals
// beyond the picodollar are rounded half away from zero.
func parseUSD(v []byte) (groundhog.Money, error) {
	bad := errors.New(`"cost_usd" must be a non-negative number of dollars`)
	if len(v) == 0 || v[0] == '"' || v[0] == '-' {
		return 0, bad
	}
	if m, err := groundhog.ParseMoney(string(v)); err == nil {
		return m, nil
	}
	// Exponents or more than 12 decimals: exact rational arithmetic.
	var num json.Number
	if err := json.Unmarshal(v, &num); err != nil {
		return 0, bad
	}
	r, ok := new(big.Rat).SetString(num.String())
	if !ok || r.Sign() < 0 {
		return 0, bad
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(groundhog.Dollar)))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Mul(rem, big.NewInt(2)).CmpAbs(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(9_000_000*groundhog.Dollar) {
		return 0, errors.New(`"cost_usd" is out of range`)
	}
	return groundhog.Money(q.Int64()), nil
}

// jsonInt reads a JSON number that is an integer (12, or 12.0, 1.2e1).
func jsonInt(v []byte) (int64, bool) {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	f, ok := jsonFloat(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// jsonFloat reads a JSON number. strconv alone would also take "Inf",
// "0x1p3" and "1_0", which are not JSON.
func jsonFloat(v []byte) (float64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// jsonString reads a JSON string value.
func jsonString(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
