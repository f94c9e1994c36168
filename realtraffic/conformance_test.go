package realtraffic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/localgw"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/realtraffic"
	"github.com/groundhog-ai/groundhog/wire"
)

// modelled are the routes the gateway parses, prices and caches; every
// other route is relayed as passthrough.
var modelled = map[string]bool{"/v1/chat/completions": true, "/v1/responses": true, "/v1/messages": true, "/v1/embeddings": true}

// replay is the upstream: it answers each request with the recorded
// response of the interaction whose request it is. Interactions whose
// requests are identical (as JSON, stream flags aside) share a key; the
// suite runs those one after the other and names the current one.
type replay struct {
	mu      sync.Mutex
	current map[string]*realtraffic.Interaction
	calls   map[string]*atomic.Int64 // upstream calls per interaction ID
}

// requestKey identifies a request as the upstream sees it: method, route
// and the body as canonical JSON without stream and stream_options (the
// gateway may add stream_options.include_usage, a documented rewrite).
func requestKey(method, route string, body []byte) string {
	var m map[string]any
	if json.Unmarshal(body, &m) == nil && m != nil {
		delete(m, "stream")
		delete(m, "stream_options")
		b, _ := json.Marshal(m) // map keys sorted
		return method + " " + route + " " + string(b)
	}
	return method + " " + route + " " + string(body)
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := requestKey(r.Method, r.URL.Path, body)
	rp.mu.Lock()
	it := rp.current[key]
	rp.mu.Unlock()
	if it == nil {
		http.Error(w, "no recorded interaction for "+r.Method+" "+r.URL.Path, http.StatusTeapot)
		return
	}
	rp.calls[it.ID].Add(1)
	w.Header().Set("Content-Type", it.Meta.ContentType)
	w.WriteHeader(it.Meta.Status)
	_, _ = w.Write(it.Response)
}

// result is what one interaction's checks found.
type result struct {
	identical, usageRight, costRight, replayRight bool
	hash                                          string
	want                                          expected
	calls                                         int64 // calls sent to the gateway
	// relayed is what a passthrough exchange's ledger row carries: the
	// usage of a JSON answer that has one, priced by that answer's model.
	relayed expected
}

// TestConformanceRealTraffic replays every recorded exchange through a real
// gateway in front of a replay upstream and checks, per exchange: the
// client receives the recorded bytes (JSON compared as JSON where the
// recording is not byte-exact; streams event by event); the prompt-cache
// and cost figures (headers or trailers, and the ledger row) equal the
// recorded usage under the provider's semantics priced by the price
// table's arithmetic; an identical second call with Groundhog-Cache: use is
// a hit with the same bytes, or reaches the provider again when the answer
// is an error or a refusal; a stored stream answers a non-stream call (and
// the reverse) with the same usage; passthrough routes relay unchanged.
func TestConformanceRealTraffic(t *testing.T) {
	dir := realtraffic.Folder(t)
	all, err := realtraffic.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rp := &replay{current: map[string]*realtraffic.Interaction{}, calls: map[string]*atomic.Int64{}}
	groups := map[string][]*realtraffic.Interaction{}
	var order []string
	for i := range all {
		it := &all[i]
		rp.calls[it.ID] = new(atomic.Int64)
		k := requestKey(it.Meta.Method, it.Meta.Route, it.Request)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], it)
	}
	up := httptest.NewServer(rp)
	t.Cleanup(up.Close)
	started := time.Now()
	g, err := localgw.Start(context.Background(), t.TempDir(), localgw.Options{
		OpenAI:    gateway.Upstream{BaseURL: up.URL + "/v1", APIKey: "sk-replay", Provider: "openai"},
		Anthropic: gateway.Upstream{BaseURL: up.URL + "/v1", APIKey: "sk-replay", Provider: "anthropic"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })

	var (
		mu      sync.Mutex
		results = map[string]*result{}
	)
	t.Run("interactions", func(t *testing.T) {
		for _, k := range order {
			group := groups[k]
			t.Run(strings.ReplaceAll(group[0].ID, "/", "|"), func(t *testing.T) {
				t.Parallel()
				for _, it := range group {
					rp.mu.Lock()
					rp.current[k] = it
					rp.mu.Unlock()
					res := check(t, g.URL, rp, it)
					mu.Lock()
					results[it.ID] = res
					mu.Unlock()
				}
			})
		}
	})

	// The ledger: the upstream row of each exchange carries the recorded
	// usage and the price table's cost.
	if err := g.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := map[string]groundhog.LedgerEntry{}
	err = g.DB.ScanLedger(context.Background(), groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		if e.Outcome == groundhog.OutcomeUpstream || e.Outcome == groundhog.OutcomeError {
			if _, seen := rows[e.RequestHash]; !seen {
				rows[e.RequestHash] = *e
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var checked, identical, usageRight, costRight, replayRight, withUsage, priced int
	var sum reportSum
	for _, it := range all {
		res := results[it.ID]
		if res == nil {
			continue
		}
		checked++
		model := firstNonEmpty(it.Meta.ResponseModel, it.Meta.RequestModel)
		if res.want.priced && res.want.input+res.want.output+res.want.read+res.want.write > 0 && !unpriceableModel(model) {
			withUsage++
			if res.want.cost.Known() {
				priced++
			}
		}
		sum.add(res, rp.calls[it.ID].Load())
		if res.want.priced && res.hash != "" {
			row, ok := rows[res.hash]
			switch {
			case !ok:
				res.usageRight = false
				t.Errorf("%s: no ledger row for %s", it.ID, res.hash)
			case row.Usage.CachedInputTokens != res.want.read || row.Usage.CacheWriteTokens != res.want.write || row.Usage.OutputTokens != res.want.output:
				res.usageRight = false
				t.Errorf("%s: ledger usage %+v, want read %d write %d output %d", it.ID, row.Usage, res.want.read, res.want.write, res.want.output)
			case row.Cost != res.want.cost:
				res.costRight = false
				t.Errorf("%s: ledger cost %v, want %v", it.ID, row.Cost, res.want.cost)
			}
		}
		for n, ok := range []bool{res.identical, res.usageRight, res.costRight, res.replayRight} {
			if ok {
				(*[]*int{&identical, &usageRight, &costRight, &replayRight}[n])++
			}
		}
	}
	t.Logf("real traffic: %d interactions checked, %d bytes identical, %d usage right, %d cost right, %d replay right; %d report a usage, %d of them priced",
		checked, identical, usageRight, costRight, replayRight, withUsage, priced)
	if priced != withUsage {
		t.Errorf("%d interactions report a usage whose cost is unknown (a model the price table lacks)", withUsage-priced)
	}
	checkReport(t, g.DB, started, time.Now(), sum)
	if checked != len(all) {
		t.Errorf("%d of %d interactions checked", checked, len(all))
	}
}

// call sends one request to the gateway and returns the response and its
// whole body.
func call(t *testing.T, base string, it *realtraffic.Interaction, body []byte, cacheVersion string) (*http.Response, []byte) {
	t.Helper()
	url := base + it.Meta.Route
	if it.Meta.Query != "" {
		url += "?" + it.Meta.Query
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(it.Meta.Method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", firstNonEmpty(it.Meta.RequestContentType, "application/json"))
	}
	req.Header.Set("Groundhog-Cache", "use")
	// A version per exchange: recordings whose requests are identical
	// (their answers differ) never share a cache entry.
	req.Header.Set("Groundhog-Cache-Version", cacheVersion)
	if it.Meta.Provider == "anthropic" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("%s: reading the answer: %v", it.ID, err)
	}
	return res, b
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// check runs one exchange's checks.
func check(t *testing.T, base string, rp *replay, it *realtraffic.Interaction) *result {
	res := &result{usageRight: true, costRight: true}
	version := "rt=" + strings.ReplaceAll(it.ID, "/", ".")
	m := it.Meta
	r1, b1 := call(t, base, it, it.Request, version)
	res.calls++
	res.hash = r1.Header.Get("Groundhog-Request-Hash")
	if r1.StatusCode != m.Status {
		t.Errorf("%s: status %d, want %d: %.300s", it.ID, r1.StatusCode, m.Status, b1)
		return res
	}
	res.identical = sameAnswer(t, it, b1)
	if !modelled[m.Route] {
		res.replayRight = rp.calls[it.ID].Load() == 1
		res.relayed = expectRelayed(t, it)
		return res
	}
	sh := shapeOf(m.Route)
	res.want = expect(t, it, sh)
	hdr := figures(r1)
	if res.want.priced {
		want := fmt.Sprintf("read=%d write=%d", res.want.read, res.want.write)
		if sh == groundhog.ShapeEmbeddings || res.want.input+res.want.output == 0 {
			want = "" // no prompt caching, or no usage reported: no figures
		}
		if got := hdr.Get("Groundhog-Prompt-Cache"); got != want {
			res.usageRight = false
			t.Errorf("%s: Groundhog-Prompt-Cache %q, want %q", it.ID, got, want)
		}
		if got, want := hdr.Get("Groundhog-Cost-USD"), costString(res.want.cost); got != want {
			res.costRight = false
			t.Errorf("%s: Groundhog-Cost-USD %q, want %q", it.ID, got, want)
		}
	}

	// The identical second call: a hit with the same bytes, or — for an
	// error or a refusal, never cached — the provider again.
	r2, b2 := call(t, base, it, it.Request, version)
	res.calls++
	cacheable := m.Status/100 == 2 && !refusal(it) && !res.want.failed
	switch state := r2.Header.Get("Groundhog-Cache"); {
	case cacheable && (state != "hit" || !bytes.Equal(b1, b2)):
		t.Errorf("%s: second call Groundhog-Cache %q (want hit), same bytes %v", it.ID, state, bytes.Equal(b1, b2))
	case !cacheable && (state == "hit" || rp.calls[it.ID].Load() != 2):
		t.Errorf("%s: an error or refusal was served from the cache (%q, %d upstream calls)", it.ID, state, rp.calls[it.ID].Load())
	default:
		res.replayRight = true
	}
	// The other mode, served from the stored answer, parses and keeps the usage.
	if cacheable && sh != groundhog.ShapeEmbeddings && json.Valid(it.Request) {
		other := otherMode(it.Request, m.RequestStream, sh == groundhog.ShapeChat)
		r3, b3 := call(t, base, it, other, version)
		res.calls++
		ok := r3.Header.Get("Groundhog-Cache") == "hit" && r3.StatusCode == m.Status
		if !m.RequestStream {
			_, err := wire.NewSSEReader(bytes.NewReader(b3)).Next()
			ok = ok && err == nil
		} else {
			ok = ok && json.Valid(b3)
		}
		got := sumParts(partsOf(t, m.Provider, answerUsage(m.Provider, !m.RequestStream, b3)))
		if res.want.priced && (got.read != res.want.read || got.write != res.want.write || got.input != res.want.input || got.output != res.want.output) {
			ok = false
		}
		if !ok {
			res.replayRight = false
			t.Errorf("%s: the other mode from the cache: %d %q usage %+v (want %+v): %.300s", it.ID, r3.StatusCode,
				r3.Header.Get("Groundhog-Cache"), got, res.want, b3)
		}
	}
	return res
}

// figures returns the groundhog figures of an answer: its headers, or a
// stream's trailers when the figures were known only at its end.
func figures(r *http.Response) http.Header {
	if r.Header.Get("Groundhog-Cost-USD") == "" && r.Trailer != nil {
		return r.Trailer
	}
	return r.Header
}

// otherMode returns request asking for the other mode: stream removed, or
// stream set (with the usage chunk asked for, on chat).
func otherMode(request []byte, stream, chat bool) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(request, &m) != nil {
		return request
	}
	if stream {
		delete(m, "stream")
		delete(m, "stream_options")
	} else {
		m["stream"] = json.RawMessage("true")
		if chat { // a chat stream reports usage only when asked to
			m["stream_options"] = json.RawMessage(`{"include_usage":true}`)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

func shapeOf(route string) groundhog.Shape {
	switch route {
	case "/v1/chat/completions":
		return groundhog.ShapeChat
	case "/v1/responses":
		return groundhog.ShapeResponses
	case "/v1/embeddings":
		return groundhog.ShapeEmbeddings
	}
	return groundhog.ShapeMessages
}

// sameAnswer reports whether the client's body is the recorded one: bytes
// where the recording is byte-exact, JSON values otherwise; a stream event
// by event (names, and data as JSON).
func sameAnswer(t *testing.T, it *realtraffic.Interaction, got []byte) bool {
	want := it.Response
	if it.Meta.ResponseBytesExact && bytes.Equal(got, want) {
		return true
	}
	if !it.Meta.Stream {
		if !it.Meta.ResponseBytesExact && jsonEqual(got, want) {
			return true
		}
		t.Errorf("%s: the answer is not the recorded one (%d bytes, recorded %d)", it.ID, len(got), len(want))
		return false
	}
	ge, we := events(got), events(want)
	if len(ge) != len(we) {
		t.Errorf("%s: %d events, recorded %d", it.ID, len(ge), len(we))
		return false
	}
	for i := range we {
		if ge[i].Name != we[i].Name || !(bytes.Equal(ge[i].Data, we[i].Data) || jsonEqual(ge[i].Data, we[i].Data)) {
			t.Errorf("%s: event %d is %s %.200s, recorded %s %.200s", it.ID, i, ge[i].Name, ge[i].Data, we[i].Name, we[i].Data)
			return false
		}
	}
	return true
}

func events(b []byte) []groundhog.Event {
	var out []groundhog.Event
	rd := wire.NewSSEReader(bytes.NewReader(b))
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// refusal reports whether the recorded answer is a refusal by policy
// (never cached): Anthropic stop_reason "refusal", a chat refusal or
// content_filter finish, a Responses refusal item or content_filter end.
func refusal(it *realtraffic.Interaction) bool {
	r := it.Response
	for _, s := range []string{`"stop_reason":"refusal"`, `"finish_reason":"content_filter"`, `"type":"refusal"`, `"reason":"content_filter"`} {
		if bytes.Contains(bytes.ReplaceAll(r, []byte(`": "`), []byte(`":"`)), []byte(s)) {
			return true
		}
	}
	var chat struct {
		Choices []struct {
			Message struct {
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(r, &chat) == nil {
		for _, c := range chat.Choices {
			if c.Message.Refusal != nil {
				return true
			}
		}
	}
	return false
}

func costString(m groundhog.Money) string {
	if !m.Known() {
		return "unknown"
	}
	return m.String() // the header's rounding; the amount is the suite's own arithmetic
}

var prices = pricing.Default()
