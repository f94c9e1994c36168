package compaction

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/state"
)

// EvidenceStat describes stored evidence; groundhog.EvidenceStore has it.
// StatEvidence returns ENOTFOUND for a ref the tenant does not hold.
type EvidenceStat interface {
	StatEvidence(ctx context.Context, tenant, ref string) (*groundhog.EvidenceInfo, error)
}

// Describe returns the info of every "ev_" entry of refs the tenant holds;
// the others are left out (rendered "not stored"). A store failure is
// returned. es nil describes nothing.
func Describe(ctx context.Context, es EvidenceStat, tenant string, refs []string) (map[string]*groundhog.EvidenceInfo, error) {
	out := map[string]*groundhog.EvidenceInfo{}
	if es == nil {
		return out, nil
	}
	for _, ref := range refs {
		if !groundhog.ValidEvidenceRef(ref) || out[ref] != nil {
			continue
		}
		info, err := es.StatEvidence(ctx, tenant, ref)
		if groundhog.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("describe evidence %s: %w", ref, err)
		}
		out[ref] = info
	}
	return out, nil
}

// Compactor performs compactions. Gateway is the gateway's own
// http.Handler: the summarizing call goes through it in process, with the
// caller's credentials, so it is authenticated, ledgered, cached and priced
// like any other call (with Groundhog-Cache: use, so compacting an identical
// state again costs nothing). Fields are read-only after the first use.
type Compactor struct {
	Gateway  http.Handler
	States   groundhog.StateStore
	Evidence EvidenceStat // may be nil
	Config   config.CompactionConfig
	Prices   pricing.Table
	// MaxStateBytes is the state size limit (state.max_bytes) a compacted
	// state must respect, as a PUT must; 0 is state.DefaultMaxBytes.
	MaxStateBytes int64
}

// Request is one compaction. Model is the agent's model (it prices the
// carried tokens and is the default summarizer); SummaryModel overrides the
// summarizer (else Config.Model, else Model). IfMatch < 0 (an entity tag
// naming no version) matches no version; IfMatch > 0 requires the
// current version to be it. Proposal, when set, is used instead of asking
// a model (a state the client compacted itself); it is checked the same
// way. StepsLeft < 0: unknown. Credentials are the caller's request headers
// to forward (Authorization, X-Api-Key).
type Request struct {
	Tenant, Session     string
	Model, SummaryModel string
	IfMatch             int64
	Proposal            json.RawMessage
	StepsLeft           int64
	PromptCache         bool
	Credentials         http.Header
	Author              string
}

// Result is a performed compaction.
type Result struct {
	Version      *groundhog.StateVersion `json:"-"`
	Source       string                  `json:"source"` // "model" or "proposal"
	TokensBefore int64                   `json:"tokens_before"`
	TokensAfter  int64                   `json:"tokens_after"`
	Decision     Decision                `json:"decision"`
	CallCostUSD  string                  `json:"call_cost_usd,omitempty"`
	CallCache    string                  `json:"call_cache,omitempty"` // the gateway's Groundhog-Cache answer
	RequestHash  string                  `json:"request_hash,omitempty"`
}

// OperationName is the Groundhog-Operation of the summarizing calls.
const OperationName = "groundhog.compact"

// Compact compacts the newest state of (Tenant, Session) and writes the
// result as a new version with compare-and-swap on the version it started
// from, so a concurrent update is never overwritten (EPRECONDITION).
// Errors: ENOTFOUND no state (or deleted); EPRECONDITION IfMatch is not the
// current version, or the state changed meanwhile; EMISMATCH the proposal
// breaks a verbatim field (see Apply); EINVALID or ETOOLARGE the compacted
// state fails state.Validate (an invalid evidence ref, over MaxStateBytes),
// whether a proposal or the model's answer — in every error case nothing is
// written; EUPSTREAM the summarizing call failed or answered no JSON
// object.
func (c *Compactor) Compact(ctx context.Context, r Request) (*Result, error) {
	cur, err := c.States.GetState(ctx, r.Tenant, r.Session)
	if err != nil {
		return nil, err
	}
	if cur.Deleted {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "session %q has no working state", r.Session)
	}
	if r.IfMatch < 0 {
		return nil, groundhog.Errorf(groundhog.EPRECONDITION, "If-Match names no version; the current version is %d", cur.Version)
	}
	if r.IfMatch > 0 && r.IfMatch != cur.Version {
		return nil, groundhog.Errorf(groundhog.EPRECONDITION, "If-Match %d is not the current version %d", r.IfMatch, cur.Version)
	}
	info, err := Describe(ctx, c.Evidence, r.Tenant, cur.State.Evidence)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence store unavailable", err)
	}
	before, verbatim := Measure(cur.State, info)
	summary := r.SummaryModel
	if summary == "" {
		summary = c.Config.Model
	}
	if summary == "" {
		summary = r.Model
	}
	res := &Result{Source: "proposal", TokensBefore: before}
	res.Decision = Decide(c.Config, c.Prices, Inputs{StateTokens: before, VerbatimTokens: verbatim, PromptTokens: PromptTokens(),
		StepsLeft: r.StepsLeft, StepsSoFar: cur.Version, Model: r.Model, SummaryModel: summary, PromptCache: r.PromptCache})
	proposal := r.Proposal
	if len(bytes.TrimSpace(proposal)) == 0 {
		if summary == "" {
			return nil, groundhog.Errorf(groundhog.EINVALID, "model: required (no compaction.model is configured)")
		}
		res.Source = "model"
		if proposal, err = c.ask(ctx, r, summary, cur.State, info, res); err != nil {
			return nil, err
		}
	}
	next, err := Apply(cur.State, proposal)
	if err != nil {
		return nil, err
	}
	// What PUT and PATCH refuse, a compaction must not store either.
	if err := state.Validate(next, c.MaxStateBytes); err != nil {
		return nil, err
	}
	res.TokensAfter, _ = Measure(next, info)
	author := r.Author
	if author == "" {
		author = "compaction"
	}
	v, err := c.States.PutState(ctx, groundhog.StateVersion{Tenant: r.Tenant, Session: r.Session, State: next, Author: author}, cur.Version)
	if err != nil {
		return nil, err
	}
	res.Version = v
	return res, nil
}

// ask makes the summarizing call through the gateway and returns the
// proposal the model answered.
func (c *Compactor) ask(ctx context.Context, r Request, model string, cur groundhog.WorkingState, info map[string]*groundhog.EvidenceInfo, res *Result) (json.RawMessage, error) {
	body := SummaryRequest(model, c.Config.MaxOutputTokens, cur, info)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = "127.0.0.1:0" // in process
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Groundhog-Operation", OperationName)
	// The same state compacted by the same model has a valid answer already
	// paid for: the response cache serves it (the key covers the whole
	// state, tenant-scoped).
	req.Header.Set("Groundhog-Cache", "use")
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Credentials.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	w := &recorder{header: http.Header{}}
	c.Gateway.ServeHTTP(w, req)
	// The gateway writes this header with the wire contract's exact casing,
	// past http.Header's canonicalization.
	if v := w.header["Groundhog-Cost-USD"]; len(v) > 0 {
		res.CallCostUSD = v[0]
	} else {
		res.CallCostUSD = w.header.Get("Groundhog-Cost-USD")
	}
	res.RequestHash = w.header.Get("Groundhog-Request-Hash")
	res.CallCache = w.header.Get("Groundhog-Cache")
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(w.body.Bytes(), &e)
		code := groundhog.EUPSTREAM
		if w.code == http.StatusUnauthorized {
			code = groundhog.EUNAUTHORIZED
		}
		return nil, groundhog.Errorf(code, "the summarizing call to %s answered %d: %s", model, w.code, e.Error.Message)
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(w.body.Bytes(), &cc); err != nil || len(cc.Choices) == 0 || cc.Choices[0].Message.Content == nil {
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "the summarizing call to %s answered no message content", model)
	}
	content := *cc.Choices[0].Message.Content
	if !json.Valid([]byte(content)) {
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "the summarizing call to %s answered no JSON document", model)
	}
	return json.RawMessage(content), nil
}

// recorder is an in-memory http.ResponseWriter for the in-process call.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush makes the recorder an http.Flusher (the gateway flushes streams).
func (r *recorder) Flush() {}

var _ io.Writer = (*recorder)(nil)
