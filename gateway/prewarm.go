package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/wire"
)

// prewarm sends body — an Anthropic max_tokens 0 request over c's prompt
// (promptcache.PrewarmBody) — with c's credentials, and books what the
// provider billed for it as a ledger row of its own: outcome upstream, its
// own request hash (it is not a repeat of c), the prompt's cache write or
// read, no output, priced like any call (unknown when the provider gave no
// usage or the connection broke after sending; 0 for an error answer). It
// reports whether the provider answered with a success, the prefix then
// written. warm-then-fan-out calls it (at most once per writer) for a call
// held behind a writer that does not stream; it runs to its end even when
// c stops waiting, since what it sent is billed.
func (s *Server) prewarm(ctx context.Context, c *call, body []byte) bool {
	s.working.Add(1) // shutdown waits for its row
	defer s.working.Add(-1)
	start := s.clock.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.UpstreamTimeout)
	defer cancel()
	row := s.row(c, groundhog.OutcomeUpstream, 0)
	row.ID, row.Time = groundhog.NewTimeID(start), start.UTC()
	row.Stream, row.InFlight, row.Idempotent, row.CacheOn = false, false, false, false
	if fp, err := fingerprint.Compute(fingerprint.Params{Shape: c.shape, Tenant: c.tenant}, body); err == nil {
		row.RequestHash = fp.Hash
	}
	ok := s.sendPrewarm(ctx, c, body, &row)
	row.Latency = s.clock.Now().Sub(start)
	row.UpstreamWait = row.Latency
	row.FullCost = row.Cost
	// A failure is logged by book; the held calls go on either way.
	_ = s.book(c, row, false, time.Time{})
	s.log.Debug("fan-out pre-warm", append(logAttrs(c), "status", row.Status, "cache_write", row.Usage.CacheWriteTokens,
		"cache_read", row.Usage.CachedInputTokens, "cost", costString(row.Cost))...)
	return ok
}

// sendPrewarm does prewarm's round trip and fills row's status, usage,
// model and cost from it.
func (s *Server) sendPrewarm(ctx context.Context, c *call, body []byte, row *groundhog.LedgerEntry) bool {
	row.Cost = 0 // until something is sent
	up := s.upstreamOf(c)
	url := strings.TrimSuffix(up.BaseURL, "/") + strings.TrimPrefix(c.route, "/v1")
	req, err := newPost(ctx, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	if s.prepareUpstream(ctx, req, c, up, body, false) != nil {
		return false
	}
	res, err := s.roundTrip(req)
	if err != nil {
		row.Cost = spentOnTransportError(err)
		return false
	}
	defer res.Body.Close()
	row.Status = res.StatusCode
	if res.StatusCode/100 != 2 {
		return false // an error answer: providers do not bill it
	}
	row.Cost = groundhog.CostUnknown // billed from here: known again only with its usage
	answer, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil || !json.Valid(answer) {
		return false
	}
	model, usage, parts, _ := wire.UsagePartsFromValidBody(c.shape, answer)
	row.Model, row.Usage = firstNonEmpty(model, c.fp.Model), usage
	row.Cost = s.price(c, model, usage, parts)
	return true
}
