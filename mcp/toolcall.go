package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// stored is a tool call's answer as the records and the cache keep it: the
// JSON-RPC result, or the JSON-RPC error object when isError.
type stored struct {
	body    []byte
	isError bool
}

// asResponse wraps s for an operation record or a cache entry: status 200
// for a result, 400 for an error object.
func (s *stored) asResponse() *groundhog.Response {
	st := http.StatusOK
	if s.isError {
		st = http.StatusBadRequest
	}
	return &groundhog.Response{Status: st, ContentType: "application/json", Body: s.body}
}

func fromResponse(r *groundhog.Response) *stored {
	return &stored{body: r.Body, isError: r.Status != http.StatusOK}
}

// callParams are the parts of tools/call params the stage reads.
type callParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// call is one tools/call on its way through the stage.
type call struct {
	tenant string
	up     *upstream
	tool   string
	key    string // operation identity; "" when none
	hash   string
	id     json.RawMessage
	hdr    http.Header // the client's headers
	body   []byte      // the message as posted
	out    *clientStream
	gone   <-chan struct{} // closed when the client's request ends
	row    groundhog.LedgerEntry
	g      *Gateway
	start  time.Time
	booked bool // the row was handed to the ledger
}

// toolCall runs one tools/call through the tool policy and records its row.
func (g *Gateway) toolCall(w http.ResponseWriter, r *http.Request, tenant string, up *upstream, msg *message, body []byte) {
	start := g.clock.Now()
	var p callParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Name == "" {
		writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, "tools/call params need a tool name")
		return
	}
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if raw, ok := p.Meta[MetaIdempotencyKey]; ok {
		var k string
		if err := json.Unmarshal(raw, &k); err != nil {
			writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, "_meta[\""+MetaIdempotencyKey+"\"] must be a string")
			return
		}
		if key != "" && key != k {
			writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, "the Idempotency-Key header and _meta[\""+MetaIdempotencyKey+"\"] differ")
			return
		}
		key = k
	}
	if key != "" {
		if err := idempotency.ValidateKey(key); err != nil {
			writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, groundhog.ErrorMessage(err))
			return
		}
	}
	args := []byte(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, "tools/call arguments must be a JSON object")
		return
	}
	canon, err := fingerprint.Canonicalize(args)
	if err != nil {
		writeError(w, http.StatusBadRequest, msg.ID, codeInvalidParams, "tools/call arguments are not valid JSON")
		return
	}
	c := &call{tenant: tenant, up: up, tool: p.Name, key: key, hash: callHash(tenant, up.name, p.Name, canon),
		id: msg.ID, hdr: r.Header.Clone(), body: body, out: &clientStream{w: w}, gone: r.Context().Done(), g: g, start: start}
	if sid := r.Header.Get("Mcp-Session-Id"); g.streams != nil && sid != "" && acceptsSSE(r.Header) {
		c.out.store, c.out.st = g.streams, g.streams.open(tenant, sid)
	}
	c.row = groundhog.LedgerEntry{ID: groundhog.NewTimeID(start), Time: start.UTC(), Tenant: tenant,
		Operation: "mcp:" + up.name + "/" + p.Name, RequestHash: c.hash, Shape: Shape, Model: p.Name,
		Provider: "mcp:" + up.name, Idempotent: key != "", Status: http.StatusOK,
		Session: r.Header.Get(groundhog.HeaderSession), ParentSession: r.Header.Get(groundhog.HeaderParentSession)}
	inflight, leave := g.tracker.Enter(tenant + "\x00" + c.hash)
	c.row.InFlight = inflight
	defer func() {
		leave()
		c.book() // a path that answered nothing
	}()
	c.out.prime()
	ctx := c.detach(r.Context())
	pol := g.policy(ctx, up, p.Name)
	c.row.CacheOn = pol.readOnly && pol.cacheTTL > 0
	switch {
	case pol.readOnly:
		g.readOnly(ctx, c, pol)
	case key != "":
		g.withKey(ctx, c)
	default:
		g.withoutKey(ctx, c, pol)
	}
}

// CallHash is the request hash of a tools/call: SHA-256 over tenant,
// server, tool and the canonical form of the arguments (a JSON object;
// empty means {}).
func CallHash(tenant, server, tool string, args []byte) (string, error) {
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	canon, err := fingerprint.Canonicalize(args)
	if err != nil {
		return "", groundhog.WrapError(groundhog.EINVALID, "tool arguments are not valid JSON", err)
	}
	return callHash(tenant, server, tool, canon), nil
}

// Followers returns how many calls wait on the in-flight read-only call
// of (tenant, hash) beyond the one that runs it.
func (g *Gateway) Followers(tenant, hash string) int {
	return g.flights.Followers(tenant + "\x00" + hash)
}

// callHash is the identity of a call's inputs: tenant, server, tool and
// canonical arguments.
func callHash(tenant, server, tool string, canonArgs []byte) string {
	h := sha256.New()
	for _, part := range []string{"groundhog-mcp-v1", tenant, server, tool} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	h.Write(canonArgs)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// book hands c's row to the ledger, once: before the answer is written,
// so an answer a client has seen always has its row (the ledger journals
// it before Record returns).
func (c *call) book() {
	if c.booked {
		return
	}
	c.booked = true
	c.row.Latency = c.g.clock.Now().Sub(c.start)
	if c.g.o.Ledger != nil {
		if err := c.g.o.Ledger.Record(c.row); err != nil {
			c.g.log.Warn("mcp: ledger row not recorded", "err", err)
		}
	}
}

// fail books the row as outcome and answers c with a JSON-RPC error.
func (c *call) fail(status, code int, msg string, outcome groundhog.Outcome) {
	c.row.Outcome, c.row.Status = outcome, status
	c.row.ResultBytes = int64(len(jsonOf(map[string]any{"code": code, "message": msg})))
	c.book()
	c.out.fail(status, c.id, code, msg)
}

// answer books the row as outcome and sends st to c's client.
func (c *call) answer(st *stored, outcome groundhog.Outcome) {
	c.row.Outcome = outcome
	c.row.ResultBytes = int64(len(st.body))
	c.book()
	c.out.finish(response(c.id, st))
}

// readOnly runs a read-only call: the cache (with a TTL), then one flight
// per identical in-flight call.
func (g *Gateway) readOnly(ctx context.Context, c *call, pol toolPolicy) {
	cacheOn := pol.cacheTTL > 0 && g.o.Cache != nil
	if cacheOn {
		if e, err := g.o.Cache.Get(ctx, c.tenant, c.hash); err == nil {
			c.answer(fromResponse(&e.Response), groundhog.OutcomeCacheHit)
			return
		}
	}
	sub, leader := g.flights.Do(ctx, c.tenant+"\x00"+c.hash, func(fctx context.Context, pub *coalesce.Publisher) (*groundhog.Response, error) {
		headed := false
		st, _, err := g.execute(fctx, c, func(data []byte) {
			if !headed {
				pub.Head(http.StatusOK, "text/event-stream", true)
				headed = true
			}
			pub.Event(groundhog.Event{Data: data})
		})
		if err != nil {
			return nil, err
		}
		resp := st.asResponse()
		if cacheOn && !st.isError {
			now := g.clock.Now()
			e := &groundhog.CacheEntry{Tenant: c.tenant, RequestHash: c.hash, Shape: Shape, Response: *resp, CreatedAt: now, ExpiresAt: now.Add(pol.cacheTTL)}
			if err := g.o.Cache.Put(context.WithoutCancel(fctx), e); err != nil {
				g.log.Warn("mcp: cache put failed", "err", err)
			}
		}
		return resp, nil
	})
	defer sub.Close()
	if leader {
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				break
			}
			c.out.send(ev.Data)
		}
	}
	resp, err := sub.Wait(ctx)
	if err != nil {
		c.fail(http.StatusBadGateway, codeInternal, groundhog.ErrorMessage(err), groundhog.OutcomeError)
		return
	}
	outcome := groundhog.OutcomeUpstream
	if !leader {
		outcome = groundhog.OutcomeCoalesced
	}
	c.answer(fromResponse(resp), outcome)
}

// withKey runs a side-effect call at most once per (tenant, key).
func (g *Gateway) withKey(ctx context.Context, c *call) {
	for {
		claim, op, outcome, err := g.o.Idem.Begin(ctx, c.tenant, c.key, c.hash)
		if err != nil {
			c.fail(statusFor(err), codeFor(err), groundhog.ErrorMessage(err), groundhog.OutcomeError)
			return
		}
		switch outcome {
		case groundhog.BeginDone:
			c.answer(fromResponse(op.Result), groundhog.OutcomeReplayed)
			return
		case groundhog.BeginMismatch:
			c.fail(http.StatusOK, codeConflict, fmt.Sprintf("idempotency key %q was already used with other arguments for tool %s on MCP server %s: nothing was executed; a new intention needs a new key", c.key, c.tool, c.up.name), groundhog.OutcomeRejected)
			return
		case groundhog.BeginInProgress:
			// A concurrent duplicate waits for the running attempt.
			if _, err := g.o.Idem.Wait(ctx, c.tenant, c.key, 2*g.o.Idem.Lease()); err != nil {
				c.fail(statusFor(err), codeFor(err), groundhog.ErrorMessage(err), groundhog.OutcomeError)
				return
			}
			continue
		}
		c.row.Attempt = claim.Attempt()
		// The call runs to its end even if the client goes away: its
		// result is what a retry gets.
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go func() {
			select {
			case <-claim.Lost():
				cancel()
			case <-runCtx.Done():
			}
		}()
		st, sent, err := g.execute(runCtx, c, c.out.send)
		cancel()
		switch {
		case err == nil && st.isError:
			err = claim.Fail(ctx, st.asResponse())
		case err == nil:
			err = claim.Complete(ctx, st.asResponse())
		case !sent:
			_ = claim.Release(ctx)
			c.fail(http.StatusBadGateway, codeInternal, "MCP server "+c.up.name+" unreachable: nothing was sent; retry with the same key", groundhog.OutcomeError)
			return
		default:
			// The call was sent and its answer lost: the side effect may
			// have happened. The record keeps that verdict, so no retry
			// under this key runs it a second time.
			st = &stored{isError: true, body: jsonOf(map[string]any{"code": codeOutcomeUnknown,
				"message": "outcome unknown: the connection to MCP server " + c.up.name + " was lost after the call was sent; it is not run again under this idempotency key"})}
			if ferr := claim.Fail(ctx, st.asResponse()); ferr != nil {
				g.log.Warn("mcp: storing an unknown outcome failed", "err", ferr)
			}
			c.answer(st, groundhog.OutcomeError)
			return
		}
		if err != nil {
			g.log.Warn("mcp: operation record not settled", "key", c.key, "err", err)
		}
		c.answer(st, groundhog.OutcomeUpstream)
		return
	}
}

// seenCall is a side-effect call made without a key: when, and its answer.
type seenCall struct {
	at     time.Time
	answer *stored
}

// suspectWindow bounds how far back an identical keyless side-effect call
// counts as a suspected duplicate.
const suspectWindow = 24 * time.Hour

// withoutKey executes a side-effect call without an operation identity:
// every time, counting an identical one in the same session as a
// suspected duplicate — or, inside the tool's dedupe_window, replaying the
// first answer.
func (g *Gateway) withoutKey(ctx context.Context, c *call, pol toolPolicy) {
	sess := c.hdr.Get("Groundhog-Session")
	if sess == "" {
		sess = c.hdr.Get("Mcp-Session-Id")
	}
	dk := c.tenant + "\x00" + sess + "\x00" + c.hash
	now := g.clock.Now()
	g.mu.Lock()
	prev, seen := g.seen[dk]
	g.mu.Unlock()
	seen = seen && now.Sub(prev.at) < suspectWindow
	if seen && pol.dedupe > 0 && prev.answer != nil && now.Sub(prev.at) < pol.dedupe {
		c.answer(prev.answer, groundhog.OutcomeReplayed)
		return
	}
	st, _, err := g.execute(context.WithoutCancel(ctx), c, c.out.send)
	if err != nil {
		c.fail(http.StatusBadGateway, codeInternal, "MCP server "+c.up.name+": "+groundhog.ErrorMessage(err), groundhog.OutcomeError)
		return
	}
	g.mu.Lock()
	if len(g.seen) > 100_000 {
		clear(g.seen)
	}
	if _, again := g.seen[dk]; !again || !seen {
		g.seen[dk] = seenCall{at: now, answer: st}
	}
	g.mu.Unlock()
	outcome := groundhog.OutcomeUpstream
	if seen {
		outcome = groundhog.OutcomeSuspectedDuplicate
	}
	c.answer(st, outcome)
}

// execute sends c's message upstream and returns the response to it.
// Messages the server sends before it (progress, logs, its own requests)
// go to sink as SSE data. sent reports whether the request reached the
// server (fully written), so a failure after it leaves the outcome unknown.
func (g *Gateway) execute(ctx context.Context, c *call, sink func(data []byte)) (st *stored, sent bool, err error) {
	if c.up.stdio != nil {
		return g.executeStdio(ctx, c, sink)
	}
	var wrote bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) { wrote = i.Err == nil }})
	req, err := g.newRequest(ctx, http.MethodPost, c.hdr, c.up, c.body)
	if err != nil {
		return nil, false, err
	}
	res, err := g.client.Do(req)
	if err != nil {
		return nil, wrote, groundhog.WrapError(groundhog.EUPSTREAM, "MCP server "+c.up.name+" failed", err)
	}
	defer res.Body.Close()
	lost := func(err error) (*stored, bool, error) {
		return nil, true, groundhog.WrapError(groundhog.EUPSTREAM, "MCP server "+c.up.name+" gave no answer", err)
	}
	ct := res.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), int(g.o.Config.MaxMessageBytes)*4)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if len(data) > 0 {
					if st := answerTo(c.id, data); st != nil {
						return st, true, nil
					}
					sink(data)
				}
				data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			}
		}
		if err := sc.Err(); err != nil {
			return lost(err)
		}
		return lost(io.ErrUnexpectedEOF)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, g.o.Config.MaxMessageBytes*4))
	if err != nil {
		return lost(err)
	}
	if st := answerTo(c.id, b); st != nil {
		return st, true, nil
	}
	return lost(fmt.Errorf("HTTP %d without a JSON-RPC answer", res.StatusCode))
}

// answerTo returns the answer in data if it is the JSON-RPC response to id.
func answerTo(id json.RawMessage, data []byte) *stored {
	var m message
	if json.Unmarshal(data, &m) != nil || m.Method != "" || !sameID(m.ID, id) {
		return nil
	}
	switch {
	case len(m.Result) > 0:
		return &stored{body: m.Result}
	case len(m.Error) > 0:
		return &stored{body: m.Error, isError: true}
	}
	return nil
}

func sameID(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// clientStream is the answer to one client: plain JSON, or an SSE stream
// once the server has sent a message before the answer — or from the
// start when the answer is resumable (st non-nil: the client accepts SSE
// and has a session; see resume.go), every event then kept in store.
type clientStream struct {
	w     http.ResponseWriter
	store *streamStore
	st    *stream

	mu      sync.Mutex // send is called from the upstream's reader too
	started bool
	gone    bool // a write failed: the client went away
}

// start sends the SSE headers, and the priming event of a resumable
// stream; s.mu held.
func (s *clientStream) start() {
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
	if s.st != nil && writeEvent(s.w, s.st.eventID(0), nil) != nil {
		s.gone = true
	}
}

// prime starts a resumable answer's stream before anything else is sent.
func (s *clientStream) prime() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil && !s.started {
		s.start()
	}
}

// send relays one server message as an SSE event.
func (s *clientStream) send(data []byte) { s.event(data, false) }

// event writes one SSE event; last ends a resumable stream.
func (s *clientStream) event(data []byte, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.start()
	}
	if s.st != nil {
		n := s.store.append(s.st, data, last)
		if !s.gone && writeEvent(s.w, s.st.eventID(n), data) != nil {
			s.gone = true
		}
		return
	}
	fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", data)
	_ = http.NewResponseController(s.w).Flush()
}

// finish writes the answer.
func (s *clientStream) finish(msg []byte) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		s.event(msg, true)
		return
	}
	s.w.Header().Set("Content-Type", "application/json")
	s.w.WriteHeader(http.StatusOK)
	_, _ = s.w.Write(msg)
}

// fail writes a JSON-RPC error: with status as plain JSON, or as the last
// event of a stream already started (whose status was 200).
func (s *clientStream) fail(status int, id json.RawMessage, code int, msg string) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		writeError(s.w, status, id, code, msg)
		return
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	s.event(jsonOf(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}), true)
}
