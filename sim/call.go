package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// job is a parsed, validated model call, its prompt accounting and its
// (already generated) answer.
type job struct {
	model  string
	stream bool
	seed   seed
	// prompt is the number of prompt tokens; lookup and store the prefix
	// points passed to the PrefixCache (none for embeddings).
	prompt int
	lookup []PrefixPoint
	store  []PrefixWrite
	// cacheKey narrows the prefix-cache scope (OpenAI's prompt_cache_key).
	cacheKey string
	// reportWrites: cache writes are reported and billed (Anthropic, and
	// OpenAI's prompt_cache_options mode). OpenAI's automatic caching writes
	// for free and reports none.
	reportWrites bool
	// longWritesEnd is the prompt position up to which written tokens are
	// written with a 1-hour TTL (Anthropic "1h", which must precede "5m");
	// 0 when none is.
	longWritesEnd int
	output        int // output tokens
	// explicitCached is the size of the explicit cache (Gemini's
	// cachedContent) the prompt starts with: read at the cached rate.
	explicitCached int
	// priceModel names the price-table entry that bills usage u; nil is
	// model (Gemini's Pro models price a long prompt under another entry).
	priceModel func(u groundhog.Usage) string
	// respond writes the answer. It is called after the time to first token
	// and after billing.
	respond func(x *exchange)
}

// exchange is the state of one model call while its answer is written.
type exchange struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	ctx     context.Context
	id      seed // unique per call: request seed + call number
	created time.Time
	usage   groundhog.Usage
	reset   bool // reset-mid-stream fault
	invoke  bool // Bedrock InvokeModel: native events streamed as eventstream chunks
}

// modelCall runs one model call of shape: fault, parse, prefix cache,
// latency, bill, respond. See the package doc for what is billed when.
func (s *Server) modelCall(w http.ResponseWriter, r *http.Request, shape groundhog.Shape) {
	fam := familyOf(shape)
	// Bedrock's InvokeModel with Anthropic's native body: a Messages call
	// whose model and stream mode come from the path, answered in
	// Bedrock's framing.
	invokeID, invokeStream, invoke := "", false, false
	if shape == groundhog.ShapeMessages {
		if invokeID, invokeStream, invoke = bedrock.ParseInvokePath(r.URL.EscapedPath()); invoke {
			fam = familyBedrock
		}
	}
	if !allow(w, r, fam, http.MethodPost) {
		return
	}
	f, err := s.faultFor(r)
	if err != nil {
		writeErr(w, fam, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, fam, err)
		return
	}
	switch f.kind {
	case faultStatus:
		writeError(w, fam, f.status, fmt.Sprintf("simulated fault: upstream answered %d %s", f.status, http.StatusText(f.status)))
		return
	case faultTimeout:
		s.hang(r)
		return
	}
	if invoke {
		if body, err = bedrock.MessagesBody(invokeID, invokeStream, body); err != nil {
			writeErr(w, fam, err)
			return
		}
	}
	seedBody := body
	if shape == groundhog.ShapeConverse {
		// The content depends on the path's model id, not on cachePoints.
		modelID, _, _ := bedrock.ParsePath(r.URL.EscapedPath())
		if seedBody, err = bedrock.FingerprintBody(modelID, body); err != nil {
			writeErr(w, fam, err)
			return
		}
	}
	geminiModel, geminiMethod, _ := gemini.ParsePath(r.URL.EscapedPath())
	if shape == groundhog.ShapeGemini && !isGeminiEmbed(geminiMethod) {
		// The content depends on the path's model; the route picks the stream.
		if seedBody, err = gemini.FingerprintBody(geminiModel, body); err != nil {
			writeErr(w, fam, err)
			return
		}
	}
	sd, err := requestSeed(shape, seedBody)
	if err != nil {
		writeErr(w, fam, invalidJSON(err))
		return
	}
	var j *job
	switch shape {
	case groundhog.ShapeChat:
		j, err = parseChat(body, sd)
	case groundhog.ShapeResponses:
		if strings.HasSuffix(r.URL.Path, "/responses/compact") {
			j, err = parseCompact(body, sd, s.previous(r))
		} else {
			j, err = parseResponses(body, sd, s.previous(r))
		}
	case groundhog.ShapeEmbeddings:
		j, err = parseEmbeddings(body, sd)
	case groundhog.ShapeMessages:
		j, err = parseMessages(body, sd, s.anthropicMins)
	case groundhog.ShapeConverse:
		j, err = parseConverse(r, body, sd)
	case groundhog.ShapeGemini:
		if isGeminiEmbed(geminiMethod) {
			j, err = parseGeminiEmbed(geminiModel, geminiMethod, body, sd)
		} else {
			j, err = parseGemini(r, body, sd, s.geminiCacheFinder(r))
		}
	}
	if err != nil {
		writeErr(w, fam, err)
		return
	}

	ctx := r.Context()
	scope := scopeOf(r)
	if j.cacheKey != "" {
		scope += "\x00" + j.cacheKey
	}
	cached := j.explicitCached
	if len(j.lookup) > 0 {
		cached = s.cache.Lookup(scope, j.model, j.lookup, s.clock.Now())
	}
	ttft := s.firstToken + s.perPrompt*time.Duration(j.prompt-cached)
	if err := s.wait(ctx, ttft); err != nil {
		return // the client went away before the first token: nothing billed
	}
	var stored int
	if len(j.store) > 0 {
		stored = s.cache.Store(scope, j.model, j.store, s.clock.Now())
	}
	u := groundhog.Usage{InputTokens: int64(j.prompt), CachedInputTokens: int64(cached), OutputTokens: int64(j.output)}
	if j.reportWrites && stored > cached {
		u.CacheWriteTokens = int64(stored - cached)
		if j.longWritesEnd > cached {
			u.CacheWrite1hTokens = int64(min(stored, j.longWritesEnd) - cached)
		}
	}
	billed := j.model
	if j.priceModel != nil {
		billed = j.priceModel(u)
	}
	s.charge(billed, u)
	if f.kind == faultDrop {
		abort() // billed in full; the client sees the connection drop
	}

	x := &exchange{
		s: s, w: w, r: r, ctx: ctx,
		id:      sd.derive("call", s.calls.Add(1)),
		created: s.clock.Now(),
		usage:   u,
		reset:   f.kind == faultReset,
		invoke:  invoke,
	}
	switch fam {
	case familyBedrock:
		w.Header().Set("x-amzn-RequestId", x.id.id("req_"))
	case familyGemini:
		w.Header().Set("x-goog-request-id", x.id.id("req_"))
	case familyAnthropic:
		w.Header().Set("request-id", x.id.id("req_"))
	default:
		w.Header().Set("x-request-id", x.id.id("req_"))
	}
	if !j.stream {
		// A non-streamed answer arrives when its last token is generated.
		if err := s.wait(ctx, s.perOutput*time.Duration(j.output)); err != nil {
			return
		}
	}
	j.respond(x)
}

// wait sleeps d (if positive) with the configured Sleep.
func (s *Server) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return s.sleep(ctx, d)
}

// readBody reads r's body, at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, groundhog.Errorf(groundhog.ETOOLARGE, "request body exceeds %d bytes", maxBody)
		}
		return nil, groundhog.WrapError(groundhog.EINVALID, "could not read the request body", err)
	}
	return body, nil
}

func invalidJSON(err error) error {
	return groundhog.WrapError(groundhog.EINVALID,
		"We could not parse the JSON body of your request. The body must be a JSON object.", err)
}

// decodeBody decodes body into v, or returns a 400 error.
func decodeBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return groundhog.WrapError(groundhog.EINVALID,
				fmt.Sprintf("Invalid type for '%s': expected %s", typeErr.Field, typeErr.Type), err)
		}
		return invalidJSON(err)
	}
	return nil
}

// respondJSON writes a non-streamed answer, honouring the reset fault: half
// the body, then the connection breaks.
func (x *exchange) respondJSON(v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sim: encode response: %v", err))
	}
	if !x.reset {
		writeBody(x.w, http.StatusOK, body)
		return
	}
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	x.w.WriteHeader(http.StatusOK)
	x.w.Write(body[:len(body)/2])
	http.NewResponseController(x.w).Flush()
	abort()
}

// sse writes a server-sent event stream. Output chunks are paced by
// PerOutputToken; with the reset fault the connection breaks after half of
// them, before any terminal event.
type sse struct {
	x       *exchange
	rc      *http.ResponseController
	chunks  int // output chunks sent
	abortAt int // break after this many output chunks (0 = never)
	failed  bool
	// frame encodes one event; nil is SSE. Bedrock's ConverseStream uses
	// the AWS eventstream framing.
	frame func(dst []byte, name string, data []byte) []byte
}

// newSSE starts the stream: status 200 and event-stream headers. total is
// the number of output chunks the stream will carry.
func (x *exchange) newSSE(total int) *sse {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	st := &sse{x: x, rc: http.NewResponseController(x.w)}
	if x.invoke {
		h.Set("Content-Type", bedrock.ContentType)
		st.frame = func(dst []byte, name string, data []byte) []byte {
			return bedrock.AppendChunk(dst, groundhog.Event{Name: name, Data: data})
		}
	}
	x.w.WriteHeader(http.StatusOK)
	if x.reset {
		st.abortAt = max(1, total/2)
	}
	return st
}

// event sends one event; name is the "event:" field ("" for none). It
// reports false once the client is gone, so callers stop early.
func (st *sse) event(name string, v any) bool {
	if st.failed {
		return false
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sim: encode event: %v", err))
	}
	return st.raw(name, data)
}

func (st *sse) raw(name string, data []byte) bool {
	buf := make([]byte, 0, len(data)+len(name)+16)
	if st.frame != nil {
		buf = st.frame(buf, name, data)
	} else if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	if st.frame == nil {
		buf = append(buf, "data: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
	}
	if _, err := st.x.w.Write(buf); err != nil {
		st.failed = true
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.failed = true
		return false
	}
	return true
}

// chunk sends one output chunk (one token of text, or a piece of tool-call
// arguments), after PerOutputToken unless it is the first.
func (st *sse) chunk(name string, v any) bool {
	if st.failed {
		return false
	}
	if st.chunks > 0 {
		if err := st.x.s.wait(st.x.ctx, st.x.s.perOutput); err != nil {
			st.failed = true
			return false
		}
	}
	if !st.event(name, v) {
		return false
	}
	st.chunks++
	if st.abortAt > 0 && st.chunks == st.abortAt {
		abort()
	}
	return true
}

// count is an integer request field (max_tokens, n, dimensions…). JSON has
// one number type, so an integral number in any spelling (1024, 1024.0,
// 1.024e3) is accepted, as the canonical fingerprint treats them as one.
type count int

func (c *count) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeOf(0)}
	}
	if f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return &json.UnmarshalTypeError{Value: "number " + string(b), Type: reflect.TypeOf(0)}
	}
	*c = count(f)
	return nil
}
