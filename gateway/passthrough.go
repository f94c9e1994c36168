package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Passthrough: every /v1/* route groundhog does not model (count_tokens,
// batches, files, responses/{id}, moderations, images, audio…) is proxied to
// its provider as it is — authenticated, with the provider key injected, never
// cached or coalesced — and ledgered with outcome "passthrough".
//
// Which provider a route belongs to: Anthropic when the path is under
// /v1/messages/ or /v1/complete, or when the request carries an
// Anthropic-Version header (every Anthropic SDK sends one); OpenAI
// otherwise. Bodies are streamed both ways, never held whole: a multipart
// upload or an audio download costs the gateway a copy buffer, not its size.
//
// The ledger row is written when the response has been relayed (a crash in
// the middle of a relay loses that row: passthrough routes are not model
// work that groundhog replays). Its request hash is the SHA-256 of the
// method, the path with its query and the body bytes as they streamed by, so
// repeated passthrough calls show up as repeats in the report. Its cost is
// the provider's usage priced when the response carries one (JSON bodies up
// to passthroughUsageBytes, or a data event of a stream), 0 for routes that
// bill nothing by tokens, and unknown for routes priced per item (images,
// audio, video) and for streams whose usage was not read — never a silent
// zero for work the provider charged.

// passthroughUsageBytes bounds how much of a JSON response the gateway keeps
// to read its usage: larger responses are relayed without it.
const passthroughUsageBytes = 1 << 20

// perItemRoutes are billed by the provider per image, second or character
// rather than by tokens: their cost is unknown unless usage says otherwise.
var perItemRoutes = []string{"/v1/images/", "/v1/audio/", "/v1/videos"}

// hopHeaders are hop-by-hop response headers, never relayed.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// passthroughMethods are the methods a provider route takes; any other
// (CONNECT, TRACE, an unknown token) is a 405 and never reaches the provider.
var passthroughMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// connectionNominated returns the header names h's Connection header lists:
// they are hop-by-hop for this message (RFC 9110 §7.6.1) and are not
// forwarded, whichever way the message goes.
func connectionNominated(h http.Header) map[string]bool {
	var out map[string]bool
	for _, v := range h.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				if out == nil {
					out = map[string]bool{}
				}
				out[http.CanonicalHeaderKey(tok)] = true
			}
		}
	}
	return out
}

// passthroughUpstream returns the provider of a passthrough route and the
// shape whose error format and usage fields it uses.
func (s *Server) passthroughUpstream(r *http.Request) (*Upstream, groundhog.Shape) {
	p := r.URL.Path
	if gemini.IsPath(p) {
		return &s.opts.Gemini, groundhog.ShapeGemini
	}
	if strings.HasPrefix(p, "/model/") || strings.HasPrefix(p, "/guardrail/") || strings.HasPrefix(p, "/async-invoke") {
		// A Bedrock route the gateway does not relay still answers in
		// Bedrock's exception shape, which the AWS SDK reads.
		return &s.opts.Bedrock, groundhog.ShapeConverse
	}
	if strings.HasPrefix(p, "/v1/messages/") || p == "/v1/complete" || r.Header.Get("Anthropic-Version") != "" {
		return &s.opts.Anthropic, groundhog.ShapeMessages
	}
	return &s.opts.OpenAI, groundhog.ShapeResponses
}

// safePassthroughPath reports whether the escaped path stays inside /v1/
// (/v1beta/ or /upload/v1beta/ for the Gemini routes): no
// empty, "." or ".." segments, no encoded slash or backslash, no control
// characters. Anything else could make the provider URL climb out of its
// base and carry the provider key elsewhere.
func safePassthroughPath(escaped string, geminiRoute bool) bool {
	prefix := "/v1/"
	if geminiRoute && strings.HasPrefix(escaped, geminiPrefix) {
		prefix = geminiPrefix
	}
	if geminiRoute && gemini.IsUploadPath(escaped) {
		prefix = gemini.UploadPrefix
	}
	if !strings.HasPrefix(escaped, prefix) || strings.ContainsAny(escaped, "\\") || strings.ContainsFunc(escaped, unicode.IsControl) {
		return false
	}
	low := strings.ToLower(escaped)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%2e") || strings.Contains(low, "%00") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimPrefix(escaped, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return path.Clean(escaped) == escaped
}

// passthrough serves one unmodelled /v1/* route.
func (s *Server) passthrough(w http.ResponseWriter, r *http.Request) { s.passthroughFor(w, r, "") }

// passthroughFor serves one unmodelled /v1/* route whose request body
// names model: the model a usage without one is priced as (a Responses
// compaction answers a usage and no model).
func (s *Server) passthroughFor(w http.ResponseWriter, r *http.Request, model string) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	up, shape := s.passthroughUpstream(r)
	escaped := r.URL.EscapedPath()
	brp, isBedrock := bedrock.ParsePassthrough(escaped)
	if isBedrock {
		up, shape = &s.opts.Bedrock, groundhog.ShapeConverse
	}
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, shape, err)
		return
	}
	if !passthroughMethods[r.Method] {
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		s.writeError(w, r, shape, groundhog.Errorf(codeMethod, "method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	isGemini := shape == groundhog.ShapeGemini
	if !isBedrock && !safePassthroughPath(escaped, isGemini) {
		s.writeError(w, r, shape, groundhog.Errorf(groundhog.ENOTFOUND, "unknown route %s %s", r.Method, r.URL.Path))
		return
	}
	op := "passthrough"
	if v := r.Header.Get(hdrOperation); v != "" {
		if !config.ValidOperationName(v) {
			s.writeError(w, r, shape, groundhog.Errorf(groundhog.EINVALID, "%s must be 1–128 characters of letters, digits and . _ - : /", hdrOperation))
			return
		}
		op = v
	}
	session, parent, err := groundhog.SessionHeaders(r.Header.Values(groundhog.HeaderSession), r.Header.Values(groundhog.HeaderParentSession))
	if err != nil {
		s.writeError(w, r, shape, err)
		return
	}
	limit := s.cfg.PassthroughMaxBodyBytes
	if r.ContentLength > limit {
		s.writeError(w, r, shape, groundhog.Errorf(groundhog.ETOOLARGE, "request body is %d bytes; the limit is %d", r.ContentLength, limit))
		return
	}
	start := s.clock.Now()
	h := sha256.New()
	query := r.URL.RawQuery
	if isGemini {
		query = withoutKey(query) // a gateway key in ?key= never goes upstream nor into the hash
	}
	_, _ = io.WriteString(h, r.Method+"\n"+escaped+"?"+query+"\n")
	url := strings.TrimSuffix(up.BaseURL, "/") + strings.TrimPrefix(escaped, "/v1")
	if isGemini {
		url = strings.TrimSuffix(up.BaseURL, "/") + escaped // the Gemini endpoint is the host: the version is in the path
	}
	if isBedrock {
		url = strings.TrimSuffix(up.BaseURL, "/") + brp.Path // rebuilt from checked segments
	}
	if query != "" {
		url += "?" + query
	}
	var body io.Reader = http.NoBody
	if r.Body != nil && r.Body != http.NoBody {
		body = io.TeeReader(http.MaxBytesReader(w, r.Body, limit), h)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, url, body)
	if err != nil {
		s.writeError(w, r, shape, groundhog.WrapError(groundhog.EINTERNAL, "", err))
		return
	}
	req.ContentLength = r.ContentLength
	hop := connectionNominated(r.Header)
	for k, vs := range r.Header {
		if (dropHeaders[k] && k != "Cache-Control") || strings.HasPrefix(k, "Groundhog-") || hop[k] || up.Sign != nil && strings.HasPrefix(k, "X-Amz-") {
			continue
		}
		req.Header[k] = vs
	}
	up.authorize(req, r.Header, shape)
	row := groundhog.LedgerEntry{
		ID: groundhog.NewTimeID(start), Time: start.UTC(), Tenant: tenant, Operation: op,
		Provider: up.Provider, Outcome: groundhog.OutcomePassthrough, Session: session, ParentSession: parent,
	}
	if up.Sign != nil {
		err = signPassthrough(r.Context(), req, up, body, s.cfg.MaxBodyBytes)
	}
	var res *http.Response
	if err == nil {
		res, err = s.client.Do(req)
	}
	if err != nil {
		var (
			mbe  *http.MaxBytesError
			gerr *groundhog.Error
		)
		switch {
		case errors.As(err, &mbe):
			err = groundhog.Errorf(groundhog.ETOOLARGE, "request body is over the limit of %d bytes", limit)
		case errors.As(err, &gerr): // from signing: said as it is
		default:
			err = upstreamError(r.Context(), err)
		}
		row.Status, row.Cost, row.FullCost = statusFor(groundhog.ErrorCode(err)), 0, 0
		s.recordPassthrough(row, h, start)
		if r.Context().Err() == nil {
			s.writeError(w, r, shape, err)
		}
		return
	}
	defer res.Body.Close()
	hop = connectionNominated(res.Header)
	for k, vs := range res.Header {
		if !hopHeaders[k] && !hop[k] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(res.StatusCode)
	usage := &capped{max: passthroughUsageBytes}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	var dst io.Writer = w
	if mt == "application/json" {
		dst = io.MultiWriter(w, usage)
	}
	var events *sseUsage
	if mt == "text/event-stream" {
		events = &sseUsage{shape: shape}
		dst = io.MultiWriter(flushWriter{w: w, rc: http.NewResponseController(w)}, events)
	}
	_, cerr := io.CopyBuffer(dst, res.Body, make([]byte, 32<<10))
	row.Status = res.StatusCode
	if cerr != nil {
		row.Status = statusClientGone
		if r.Context().Err() == nil {
			row.Status = http.StatusBadGateway
		}
	}
	switch {
	case isBedrock:
		row.Model, row.Usage, row.Cost = s.bedrockPassthroughCost(brp, res.StatusCode, usage)
	case isGemini:
		row.Model, row.Usage, row.Cost = s.geminiPassthroughCost(r, res.StatusCode, usage) // gemini.go
	case events != nil:
		row.Model, row.Usage, row.Cost = s.streamPassthroughCost(res.StatusCode, events)
	default:
		row.Model, row.Usage, row.Cost = s.passthroughCost(r.URL.Path, shape, usage, model)
	}
	if row.Usage != (groundhog.Usage{}) && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/responses/") {
		// A stored response read back: its usage was billed by the call
		// that made it, but for a background one, booked here once.
		answer := usage.buf.Bytes()
		if events != nil {
			answer = events.last // a stream resumed: its final event holds the response
		}
		s.bookBackground(row, answer)
		row.Usage, row.Cost = groundhog.Usage{}, 0 // the read itself is free
	}
	row.FullCost = row.Cost
	s.recordPassthrough(row, h, start)
}

// bookBackground books the usage of a background response read back
// (GET /v1/responses/{id}, as a body or resumed as a stream, with
// background true and a usage: its work is done), once, however often a
// client polls or resumes it: the row's ID and time come from the
// response's id and creation, so writing it again stores nothing. row is
// the read's own row, priced with the response's usage; answer is the
// response (of a stream, the one its last event with a usage carries). A
// response that did not run in the background was billed by the call that
// made it: nothing is booked.
func (s *Server) bookBackground(row groundhog.LedgerEntry, answer []byte) {
	var r struct {
		ID         string `json:"id"`
		CreatedAt  int64  `json:"created_at"`
		Background bool   `json:"background"`
	}
	if json.Unmarshal(answer, &r) != nil || r.ID == "" || !r.Background || s.opts.Ledger == nil {
		return
	}
	created := time.Unix(r.CreatedAt, 0).UTC()
	row.ID, row.Time = groundhog.OnceRowID(row.Tenant, "openai.background "+r.ID, created), created
	h := sha256.Sum256([]byte("background response " + r.ID))
	row.RequestHash = "sha256:" + hex.EncodeToString(h[:])
	row.FullCost = row.Cost
	row.Model = boundModel(row.Model)
	if err := s.opts.Ledger.Record(row); err != nil {
		s.log.Error("ledger record failed", "tenant", row.Tenant, "operation", row.Operation, "err", err)
	}
}

// signPassthrough signs req for an upstream that signs its requests
// (Bedrock with SigV4 from the AWS credential chain). The signature covers
// the body's digest, so the body is held whole first — at most max bytes
// (max_body_bytes, not the larger passthrough limit: what streams through
// unsigned is held in memory here) — and req carries the bytes read.
// Errors: the client's body errors (*http.MaxBytesError, a read error) as
// they are; a body over max as ETOOLARGE; a signing failure as EUPSTREAM.
func signPassthrough(ctx context.Context, req *http.Request, up *Upstream, body io.Reader, max int64) error {
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > max {
		return groundhog.Errorf(groundhog.ETOOLARGE, "request body is over the limit of %d bytes (max_body_bytes) for a passthrough route signed with SigV4; a Bedrock API key (bedrock_api_key) lifts it to passthrough_max_body_bytes", max)
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	if len(b) == 0 {
		req.Body = http.NoBody
	}
	if err := up.Sign(ctx, req, b); err != nil {
		return groundhog.WrapError(groundhog.EUPSTREAM, "signing the upstream request failed", err)
	}
	return nil
}

// bedrockPassthroughCost prices a relayed Bedrock runtime response:
// CountTokens and error answers are free; an InvokeModel JSON body with an
// Anthropic-style usage (the native body of Claude models) is priced by
// the path's model id; everything else Bedrock bills (streamed invokes,
// other providers' native bodies, guardrails, async jobs) is unknown —
// never a silent zero.
func (s *Server) bedrockPassthroughCost(p bedrock.Passthrough, status int, usage *capped) (string, groundhog.Usage, groundhog.Money) {
	if p.Op == "count-tokens" || status/100 != 2 {
		return p.ModelID, groundhog.Usage{}, 0
	}
	if p.Op == "invoke" && !usage.over && usage.buf.Len() > 0 {
		if _, u, err := wire.UsageFromBody(groundhog.ShapeMessages, usage.buf.Bytes()); err == nil && u != (groundhog.Usage{}) {
			return p.ModelID, u, s.cfg.PriceTable.Cost(p.ModelID, u)
		}
	}
	return p.ModelID, groundhog.Usage{}, groundhog.CostUnknown
}

// passthroughUsage reads the model and usage of a relayed body (or stream
// event). The OpenAI routes answer with Responses-style usage
// (input_tokens) or, the legacy completions and others, Chat-style usage
// (prompt_tokens): the second is read when the first finds nothing.
func passthroughUsage(shape groundhog.Shape, body []byte) (string, groundhog.Usage, error) {
	model, u, err := wire.UsageFromBody(shape, body)
	if shape == groundhog.ShapeResponses && u == (groundhog.Usage{}) {
		if m, cu, cerr := wire.UsageFromBody(groundhog.ShapeChat, body); cerr == nil && cu != (groundhog.Usage{}) {
			return m, cu, nil
		}
	}
	return model, u, err
}

// passthroughCost prices a relayed response from its usage, if it had one,
// as the model it names or else as asked (the request body's model, "" when
// not known). A stored response read back is priced here and made free by
// passthroughFor (bookBackground).
func (s *Server) passthroughCost(p string, shape groundhog.Shape, usage *capped, asked string) (string, groundhog.Usage, groundhog.Money) {
	if !usage.over && usage.buf.Len() > 0 && bytes.Contains(usage.buf.Bytes(), []byte(`"usage"`)) {
		model, u, _ := passthroughUsage(shape, usage.buf.Bytes())
		if u != (groundhog.Usage{}) {
			if model == "" {
				model = asked
			}
			return model, u, s.cfg.PriceTable.Cost(model, u)
		}
	}
	for _, pre := range perItemRoutes {
		if strings.HasPrefix(p, pre) {
			return "", groundhog.Usage{}, groundhog.CostUnknown
		}
	}
	return "", groundhog.Usage{}, 0
}

// streamPassthroughCost prices a relayed event stream from the usage one
// of its events carried (the final chunk of an OpenAI stream asked with
// stream_options.include_usage). A stream whose usage was not read is
// unknown: the provider billed the tokens it streamed, groundhog cannot say
// how many. An error status bills nothing.
func (s *Server) streamPassthroughCost(status int, ev *sseUsage) (string, groundhog.Usage, groundhog.Money) {
	if status/100 != 2 {
		return ev.model, groundhog.Usage{}, 0
	}
	if ev.usage == (groundhog.Usage{}) {
		return ev.model, groundhog.Usage{}, groundhog.CostUnknown
	}
	return ev.model, ev.usage, s.cfg.PriceTable.Cost(ev.model, ev.usage)
}

// sseUsage reads a relayed event stream as it goes by, line by line, and
// keeps the model and the last non-empty usage of its data events. A line
// longer than passthroughUsageBytes is skipped, never held whole. Only the
// first event naming a model and the events with a usage member are
// decoded.
type sseUsage struct {
	shape groundhog.Shape
	line  []byte
	skip  bool // the current line is over the limit
	model string
	usage groundhog.Usage
	last  []byte // the data of the last event with a usage (of a Responses event, its response)
}

func (e *sseUsage) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !e.skip {
			if len(e.line)+len(part) > passthroughUsageBytes {
				e.skip, e.line = true, e.line[:0]
			} else {
				e.line = append(e.line, part...)
			}
		}
		if i < 0 {
			break
		}
		if !e.skip {
			e.event(e.line)
		}
		e.line, e.skip = e.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// event reads one line of the stream: a data line with a usage member.
func (e *sseUsage) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok {
		return
	}
	hasUsage := bytes.Contains(data, []byte(`"usage"`))
	if !hasUsage && (e.model != "" || !bytes.Contains(data, []byte(`"model"`))) {
		return
	}
	data = bytes.TrimSpace(data)
	if e.shape == groundhog.ShapeResponses && bytes.Contains(data, []byte(`"response"`)) {
		// A Responses event (response.completed, …) carries the response,
		// and its usage, under "response".
		var ev struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(data, &ev) == nil && len(ev.Response) > 0 && ev.Response[0] == '{' {
			data = ev.Response
		}
	}
	model, u, err := passthroughUsage(e.shape, data)
	if model != "" {
		e.model = model
	}
	if err == nil && u != (groundhog.Usage{}) {
		e.usage = u
		e.last = append(e.last[:0], data...)
	}
}

func (s *Server) recordPassthrough(row groundhog.LedgerEntry, h hash.Hash, start time.Time) {
	row.RequestHash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	row.Latency = s.clock.Now().Sub(start)
	row.Model = boundModel(row.Model)
	if s.opts.Ledger == nil {
		return
	}
	if err := s.opts.Ledger.Record(row); err != nil {
		s.log.Error("ledger record failed", "tenant", row.Tenant, "operation", row.Operation, "err", err)
	}
}

// capped keeps the first max bytes written to it and notes that more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if !c.over {
		if c.buf.Len()+len(p) > c.max {
			c.over = true
			c.buf = bytes.Buffer{}
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// flushWriter flushes after every write, for relayed event streams.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		_ = f.rc.Flush()
	}
	return n, err
}
