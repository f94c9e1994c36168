package ledger

// This file is a copy of Analyze as it was before branch anfast (main at
// f2eebc1: analyze.go from Analyze on, and parse from analyze_line.go),
// renamed, test-only: TestAnalyzeMatchesOldPath compares the reports of
// the two paths. It must stay a copy of that code; do not "fix" it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/pricing"
)

// oldParser is the old worker: parser's helpers, the old parse.
type oldParser struct{ *parser }

func oldAnalyze(ctx context.Context, r io.Reader, o AnalyzeOptions) ([]*Report, AnalyzeStats, error) {
	an := newOldAnalyzer(o)
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

type oldAnalyzer struct {
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

func newOldAnalyzer(o AnalyzeOptions) *oldAnalyzer {
	an := &oldAnalyzer{o: o, loc: o.Location, prices: o.Prices, inFlight: newReqMap[int64](), maxSeen: math.MinInt64}
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

// run reads r in chunks of whole lines, parses them on GOMAXPROCS workers
// and feeds the calls, in input order, to the reorder buffer. Parsing and
// fingerprinting are most of the work; the ordered part (days, repeats,
// in-flight) stays on this goroutine.
func (an *oldAnalyzer) run(ctx context.Context, r io.Reader) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	quit := make(chan struct{})
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, workers+1)
	free := make(chan []byte, workers+3)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		oldReadChunks(r, quit, work, ordered, free)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &oldParser{&parser{shape: an.o.Shape, tenant: an.o.Tenant, prices: an.prices, intern: map[string]string{}}}
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
func (an *oldAnalyzer) collect(ctx context.Context, ordered <-chan *chunk, free chan<- []byte) error {
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
func oldReadChunks(r io.Reader, quit <-chan struct{}, work, ordered chan<- *chunk, free <-chan []byte) {
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
func (p *oldParser) parseChunk(c *chunk) {
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
func (p *oldParser) line(b []byte, n int64) (c pendingCall, ok bool, err error) {
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
func (an *oldAnalyzer) push(c pendingCall) error {
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
func (an *oldAnalyzer) flush() {
	for an.buf.len() > 0 {
		an.release(an.buf.pop())
	}
	an.closeDay()
}

func (an *oldAnalyzer) closeDay() {
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
func (an *oldAnalyzer) release(c *pendingCall) {
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
	ref := an.inFlight.refSum(c.tenant, c.hash, &c.sum)
	until, seen := an.inFlight.get(ref)
	end := c.t + c.duration
	if !seen || end > until {
		an.inFlight.set(ref, end)
	}
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
	an.acc.Add(e)
}

func (p *oldParser) parse(b []byte, n int64) (pendingCall, error) {
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
	if ns, ok := fastTimestamp(ts); ok {
		c.t = ns
	} else {
		t, err := parseTimestamp(ts)
		if err != nil {
			return pendingCall{}, err
		}
		c.t = t.UnixNano()
	}
	if c.operation, err = p.optString("operation", op); err != nil {
		return pendingCall{}, err
	}
	if c.tenant, err = p.optString("tenant", tenant); err != nil {
		return pendingCall{}, err
	}
	if c.operation == "" {
		c.operation = DefaultOperation
	}
	if c.tenant == "" {
		c.tenant = groundhog.LocalTenant
	}
	if p.tenant != "" && c.tenant != p.tenant {
		return pendingCall{}, errFiltered // before the fingerprint: the costly part
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
	c.sum = decodeHash(c.hash) // here, on a worker, not in the serial collector
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

// refSum is m.ref(tenant, hash) for a hash already decoded into h (the old
// collector's; TestRefSumIsRef).
func (m *reqMap[V]) refSum(tenant, hash string, h *hashSum) reqRef {
	if !h.ok {
		return reqRef{slow: hashKey{tenant, hash}}
	}
	t, ok := m.tenants[tenant]
	if !ok {
		t = uint32(len(m.tenants))
		m.tenants[tenant] = t
	}
	return reqRef{compact: true, k: reqKey{tenant: t, sum: h.sum}}
}
