package ledger

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
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
	// Tenant, if set, counts only the lines of that tenant (a line without
	// a tenant is groundhog.LocalTenant's); the others are read but are
	// not calls.
	Tenant string
	// GroupBy keys the report rows: GroupByOperation (the default, also
	// "") or GroupByTenant, whose rows carry the tenant in Row.Operation
	// and whose reports have Group GroupByTenant.
	GroupBy string
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
//	  - operation: the report row (DefaultOperation if missing, as the
//	    gateway names a call without one); tenant: the tenant scope of the
//	    hash (groundhog.LocalTenant if missing, as in the gateway's
//	    single-tenant mode). o.Tenant keeps one tenant's lines; o.GroupBy
//	    GroupByTenant makes the rows tenants instead of operations.
//	  - request (required): the provider request body, fingerprinted with
//	    fingerprint.Compute exactly as the gateway does (no declared versions).
//	    Its shape comes from a "shape" field (chat, responses, embeddings,
//	    messages, a provider alias such as openai.chat or
//	    anthropic.messages, or a route path: see ParseShape) or a "path"
//	    field ending in /chat/completions, /responses, /embeddings or
//	    /messages, else from o.Shape, else it is inferred:
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
//	  - cost_usd: the call's cost in dollars, a JSON number or a string
//	    holding one ("0.004"), exact (decimal, no float).
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
	sum       hashSum // hash decoded by the worker
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
	seen             seenTable             // per request key: in flight until, seen today (analyze_seen.go)
	seenSlow         map[hashKey]*seenSlot // the same for hashes not of the gateway's form
	tenants          map[string]uint32     // tenant numbers of seenTable's keys
	lastTenant       string                // one-entry cache in front of tenants
	lastTenantIdx    uint32
	entry            groundhog.LedgerEntry
}

func newAnalyzer(o AnalyzeOptions) *analyzer {
	an := &analyzer{o: o, loc: o.Location, prices: o.Prices, maxSeen: math.MinInt64,
		seenSlow: map[hashKey]*seenSlot{}, tenants: map[string]uint32{}}
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
	tenant string // AnalyzeOptions.Tenant
	prices pricing.Table
	intern map[string]string // operation and tenant names

	priceOf map[string]priceEntry // prices by model (price)
	days    dayCache              // the last timestamp's date (fastTimestamp)
}

func (an *analyzer) newParser() *parser {
	return &parser{shape: an.o.Shape, tenant: an.o.Tenant, prices: an.prices, intern: map[string]string{}}
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
	free := make(chan *chunk, workers+3)
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
func (an *analyzer) collect(ctx context.Context, ordered <-chan *chunk, free chan<- *chunk) error {
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
				err = an.push(&res.call)
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
		recycle(c, free)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// recycle hands a consumed chunk back to readChunks, so that its buffer
// and its results (about half a megabyte per chunk of typical lines)
// are reused, not allocated again for every megabyte of input.
func recycle(c *chunk, free chan<- *chunk) {
	if cap(c.data) > 2*chunkSize { // a buffer grown for a long line is let go
		c.data = nil
	}
	if cap(c.results) > maxRecycledResults {
		c.results = nil
	}
	clear(c.results) // the strings of the old calls
	c.results = c.results[:0]
	select {
	case free <- c:
	default:
	}
}

// maxRecycledResults bounds the results kept by a recycled chunk (a chunk
// of tiny lines has many).
const maxRecycledResults = 1 << 14

// readChunks cuts r into chunks of whole lines (about chunkSize bytes; a
// longer line gets a chunk of its own, up to maxLineSize) and sends each
// to ordered, then to work, until EOF, a read error (sent as the last
// chunk's err) or quit.
func readChunks(r io.Reader, quit <-chan struct{}, work, ordered chan<- *chunk, free <-chan *chunk) {
	defer close(work)
	defer close(ordered)
	var carry []byte // the start of a line cut by the previous chunk
	line := int64(1)
	for eof := false; !eof; {
		var c *chunk
		select {
		case c = <-free:
		default:
			c = &chunk{}
		}
		if c.data == nil {
			c.data = make([]byte, 0, chunkSize)
		}
		buf := append(c.data[:0], carry...)
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
		c.data, c.firstLine, c.err, c.done = buf[:end], line, rerr, make(chan struct{})
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
	if err == errFiltered {
		return c, false, nil
	}
	return c, err == nil, err
}

// push puts c in the reorder buffer and releases every call that no later
// line can precede any more.
func (an *analyzer) push(c *pendingCall) error {
	if an.anyOut && c.t < an.released {
		return fmt.Errorf("timestamp %s is more than the reorder window (%s) before an earlier line's; sort the file by timestamp or widen the window",
			time.Unix(0, c.t).UTC().Format(time.RFC3339Nano), time.Duration(an.window))
	}
	an.stats.Calls++
	an.buf.push(c)
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
		rep := an.acc.Report(an.day)
		if an.o.GroupBy == GroupByTenant {
			rep.Group = GroupByTenant
		}
		an.reports = append(an.reports, rep)
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
		// stays with one day's hashes. The repeat rule starts afresh.
		an.seen.newDay(an.dayStart)
		for k, s := range an.seenSlow {
			if s.until <= an.dayStart {
				delete(an.seenSlow, k)
			} else {
				s.today, s.first = false, 0
			}
		}
	}
	s := an.slot(c)
	seen, until := s.used, s.until
	end := c.t + c.duration
	if !seen || end > until {
		s.until = end
	}
	s.used = true
	op := c.operation
	if an.o.GroupBy == GroupByTenant {
		op = c.tenant // the rows are keyed by tenant; the repeat rule is unchanged
	}
	e := &an.entry
	*e = groundhog.LedgerEntry{
		Time:        time.Unix(0, c.t).UTC(),
		Tenant:      c.tenant,
		Operation:   op,
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
	// What Accumulator.Add would look up in its own set, from the slot.
	oi := an.acc.op(op)
	repeat, first := s.today, s.first
	if !repeat {
		s.today, s.first = true, oi
	}
	an.acc.addSeen(e, oi, first, repeat)
}

// slot returns the seen-set slot of c's (tenant, request hash); used is
// false if the key is new.
func (an *analyzer) slot(c *pendingCall) *seenSlot {
	if !c.sum.ok {
		k := hashKey{c.tenant, c.hash}
		s := an.seenSlow[k]
		if s == nil {
			s = &seenSlot{}
			an.seenSlow[k] = s
		}
		return s
	}
	if c.tenant != an.lastTenant || len(an.tenants) == 0 {
		t, ok := an.tenants[c.tenant]
		if !ok {
			t = uint32(len(an.tenants))
			an.tenants[c.tenant] = t
		}
		an.lastTenant, an.lastTenantIdx = c.tenant, t
	}
	k := reqKey{tenant: an.lastTenantIdx, sum: c.sum.sum}
	return an.seen.slot(&k)
}
