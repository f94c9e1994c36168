package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// respUsage is the usage of a Responses or compaction answer.
type respUsage struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 // input_tokens_details.cached_tokens
	Output int64 `json:"output_tokens"`
	Total  int64 `json:"total_tokens"`
}

// postResponses posts body to path with the API key key and decodes the
// answer, failing unless it is 200.
func postResponses(t *testing.T, base, path, key, body string) (map[string]any, respUsage, []byte) {
	t.Helper()
	status, _, raw := post(t, base, path, body, "Authorization", "Bearer "+key)
	if status != 200 {
		t.Fatalf("POST %s: %d %s", path, status, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var u struct {
		Usage struct {
			respUsage
			Details struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	json.Unmarshal(raw, &u)
	ru := u.Usage.respUsage
	ru.Cached = u.Usage.Details.Cached
	if ru.Total != ru.Input+ru.Output {
		t.Fatalf("total_tokens %d, want %d", ru.Total, ru.Input+ru.Output)
	}
	return m, ru, raw
}

// getAs sends method to base+path with the API key key.
func getAs(t *testing.T, method, base, path, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	status, _, raw := do(t, req)
	return status, raw
}

// answerText returns the text of a response's assistant message.
func answerText(t *testing.T, r map[string]any) string {
	t.Helper()
	out := r["output"].([]any)[0].(map[string]any)
	return out["content"].([]any)[0].(map[string]any)["text"].(string)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// wantOpenAIError checks an OpenAI error body.
func wantOpenAIError(t *testing.T, raw []byte, msg string, param, code any) {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error: %s", raw)
	}
	if e.Error["message"] != msg || e.Error["type"] != "invalid_request_error" || e.Error["param"] != param || e.Error["code"] != code {
		t.Fatalf("error %s, want message %q param %v code %v", raw, msg, param, code)
	}
}

// billOf prices usages as the sim bills a sim-small call.
func billOf(us ...respUsage) groundhog.Money {
	p := pricing.Default()["sim-small"]
	var m groundhog.Money
	for _, u := range us {
		m += groundhog.Money((u.Input-u.Cached)*p.Input + u.Cached*p.CachedInput + u.Output*p.Output)
	}
	return m
}

// TestResponsesPreviousResponseID: a stored response is read back, listed,
// continued (the prompt is its whole context without its instructions,
// re-read from the prefix cache) and deleted; every call is billed exactly.
func TestResponsesPreviousResponseID(t *testing.T) {
	s, base := startSim(t, Config{})
	const key = "sk-a"
	first := respReq(map[string]any{"instructions": "be brief"}, rmsg{"user", "word", 1200, false})
	r1, u1, raw1 := postResponses(t, base, "/v1/responses", key, first)
	id1 := r1["id"].(string)
	if r1["store"] != true || u1.Input != 3+4+1200+4 || u1.Cached != 0 {
		t.Fatalf("first: store %v usage %+v", r1["store"], u1)
	}

	status, got := getAs(t, http.MethodGet, base, "/v1/responses/"+id1, key)
	if status != 200 || !jsonEqual(got, raw1) {
		t.Fatalf("GET: %d %s\nwant %s", status, got, raw1)
	}
	status, got = getAs(t, http.MethodGet, base, "/v1/responses/"+id1+"/input_items", key)
	var page struct {
		Object  string           `json:"object"`
		Data    []map[string]any `json:"data"`
		FirstID string           `json:"first_id"`
		LastID  string           `json:"last_id"`
		HasMore bool             `json:"has_more"`
	}
	json.Unmarshal(got, &page)
	if status != 200 || page.Object != "list" || len(page.Data) != 1 || page.HasMore || page.FirstID != page.LastID ||
		page.Data[0]["id"] != page.FirstID || !strings.HasPrefix(page.FirstID, "msg_") || page.Data[0]["type"] != "message" || page.Data[0]["role"] != "user" {
		t.Fatalf("input_items: %d %s", status, got)
	}
	// Another key sees none of it.
	if status, got := getAs(t, http.MethodGet, base, "/v1/responses/"+id1, "sk-b"); status != 404 {
		t.Fatalf("other key GET: %d %s", status, got)
	}

	// The continuation's prompt is the first's context (not its
	// instructions) then the new input: as if the client sent it all.
	next := fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":"and then"}`, id1)
	r2, u2, _ := postResponses(t, base, "/v1/responses", key, next)
	whole := respReq(map[string]any{"store": false}, rmsg{"user", "word", 1200, false},
		map[string]any{"role": "assistant", "content": answerText(t, r1)}, map[string]any{"role": "user", "content": "and then"})
	_, uw, _ := postResponses(t, base, "/v1/responses", "sk-other", whole)
	if u2.Input != uw.Input || u2.Input != 1204+u1.Output+4+2+4 {
		t.Fatalf("continuation prompt %d, whole context %d, want %d", u2.Input, uw.Input, 1204+u1.Output+6)
	}
	if r2["previous_response_id"] != id1 || r2["instructions"] != nil {
		t.Fatalf("continuation: previous_response_id %v instructions %v", r2["previous_response_id"], r2["instructions"])
	}
	// The first prompt began with the instructions, so the continuation
	// (which has none) shares no prefix with it; the other key's call
	// reads no cache of this key.
	if u2.Cached != 0 || uw.Cached != 0 {
		t.Fatalf("cached %d / %d, want 0 (the instructions were a different prefix)", u2.Cached, uw.Cached)
	}
	// A continuation of the continuation re-reads the chain from the cache.
	id2 := r2["id"].(string)
	third := fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":[{"role":"user","content":"more"}]}`, id2)
	_, u3, _ := postResponses(t, base, "/v1/responses", key, third)
	if u3.Input != u2.Input+u2.Output+4+1+4 || u3.Cached != u2.Input/128*128 {
		t.Fatalf("third usage %+v, want input %d cached %d", u3, u2.Input+u2.Output+9, u2.Input/128*128)
	}

	// Delete: gone for GET, input_items and continuation.
	status, got = getAs(t, http.MethodDelete, base, "/v1/responses/"+id1, key)
	if status != 200 || !jsonEqual(got, []byte(fmt.Sprintf(`{"id":%q,"object":"response","deleted":true}`, id1))) {
		t.Fatalf("DELETE: %d %s", status, got)
	}
	for _, path := range []string{"/v1/responses/" + id1, "/v1/responses/" + id1 + "/input_items"} {
		status, got = getAs(t, http.MethodGet, base, path, key)
		if status != 404 {
			t.Fatalf("GET %s after delete: %d %s", path, status, got)
		}
		wantOpenAIError(t, got, fmt.Sprintf("Response with id '%s' not found.", id1), nil, nil)
	}
	if status, got = getAs(t, http.MethodDelete, base, "/v1/responses/"+id1, key); status != 404 {
		t.Fatalf("second DELETE: %d %s", status, got)
	}
	status, _, got = post(t, base, "/v1/responses", next, "Authorization", "Bearer "+key)
	if status != 400 {
		t.Fatalf("continuing a deleted response: %d %s", status, got)
	}
	wantOpenAIError(t, got, fmt.Sprintf("Previous response with id '%s' not found.", id1), "previous_response_id", "previous_response_not_found")

	// store:false is not kept.
	r4, u4, _ := postResponses(t, base, "/v1/responses", key, respReq(map[string]any{"store": false}, rmsg{"user", "hi", 3, false}))
	id4 := r4["id"].(string)
	if status, _ := getAs(t, http.MethodGet, base, "/v1/responses/"+id4, key); r4["store"] != false || status != 404 {
		t.Fatalf("store:false: store %v, GET %d", r4["store"], status)
	}
	status, _, got = post(t, base, "/v1/responses", fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":"x"}`, id4), "Authorization", "Bearer "+key)
	if status != 400 || !strings.Contains(string(got), "previous_response_not_found") {
		t.Fatalf("continuing a store:false response: %d %s", status, got)
	}

	if b := s.Bill(); b.Calls != 5 || b.USD != billOf(u1, u2, uw, u3, u4) {
		t.Fatalf("bill %d calls %s, want 5 calls %s", b.Calls, b.USD, billOf(u1, u2, uw, u3, u4))
	}
}

// TestResponsesInputItemsPages: order, limit and after page a response's
// input items as the API does (newest first by default).
func TestResponsesInputItemsPages(t *testing.T) {
	_, base := startSim(t, Config{})
	r, _, _ := postResponses(t, base, "/v1/responses", "k", respReq(nil, rmsg{"user", "a", 1, false}, rmsg{"assistant", "b", 1, false}, rmsg{"user", "c", 1, false}))
	id := r["id"].(string)
	page := func(q string) (ids []string, first, last any, more bool) {
		status, raw := getAs(t, http.MethodGet, base, "/v1/responses/"+id+"/input_items"+q, "k")
		if status != 200 {
			t.Fatalf("%s: %d %s", q, status, raw)
		}
		var p struct {
			Data []struct {
				ID      string `json:"id"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"data"`
			FirstID any  `json:"first_id"`
			LastID  any  `json:"last_id"`
			HasMore bool `json:"has_more"`
		}
		json.Unmarshal(raw, &p)
		for _, d := range p.Data {
			ids = append(ids, d.Content[0].Text)
		}
		return ids, p.FirstID, p.LastID, p.HasMore
	}
	if got, _, _, more := page(""); !reflect.DeepEqual(got, []string{"c", "b", "a"}) || more {
		t.Fatalf("default order: %v more %v", got, more)
	}
	got, first, _, more := page("?order=asc&limit=2")
	if !reflect.DeepEqual(got, []string{"a", "b"}) || !more {
		t.Fatalf("asc limit 2: %v more %v", got, more)
	}
	_, _, last, _ := page("?order=asc&limit=2")
	if got, _, _, more := page(fmt.Sprintf("?order=asc&after=%s", last)); !reflect.DeepEqual(got, []string{"c"}) || more || first == last {
		t.Fatalf("after %v: %v more %v", last, got, more)
	}
	if status, raw := getAs(t, http.MethodGet, base, "/v1/responses/"+id+"/input_items?limit=0", "k"); status != 400 {
		t.Fatalf("limit=0: %d %s", status, raw)
	}
}

// TestResponsesCompact: POST /v1/responses/compact answers the context's
// user messages and one compaction item, billed as a call reading the whole
// context and writing the summary; sent back, the compaction item counts
// as its summary.
func TestResponsesCompact(t *testing.T) {
	s, base := startSim(t, Config{})
	const key = "sk-c"
	r1, u1, _ := postResponses(t, base, "/v1/responses", key, respReq(nil, rmsg{"user", "one", 30, false}))
	r2, u2, _ := postResponses(t, base, "/v1/responses", key, fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":"two"}`, r1["id"]))
	context := u2.Input + u2.Output + 4 // the second's prompt and answer
	c, uc, raw := postResponses(t, base, "/v1/responses/compact", key, fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":[]}`, r2["id"]))
	if c["object"] != "response.compaction" || !strings.HasPrefix(c["id"].(string), "resp_") || c["created_at"] == nil {
		t.Fatalf("compaction: %s", raw)
	}
	summary := 64 + context/4
	if uc.Input != context || uc.Output != summary {
		t.Fatalf("compaction usage %+v, want input %d output %d", uc, context, summary)
	}
	out := c["output"].([]any)
	if len(out) != 3 {
		t.Fatalf("compaction output: %s", raw)
	}
	// The kept user messages are the stored input items.
	for i, id := range []any{r1["id"], r2["id"]} {
		_, items := getAs(t, http.MethodGet, base, fmt.Sprintf("/v1/responses/%s/input_items", id), key)
		var p struct {
			Data []any `json:"data"`
		}
		json.Unmarshal(items, &p)
		if !reflect.DeepEqual(out[i], p.Data[0]) {
			t.Fatalf("kept message %d: %v, want %v", i, out[i], p.Data[0])
		}
	}
	cmp := out[2].(map[string]any)
	if cmp["type"] != "compaction" || !strings.HasPrefix(cmp["id"].(string), "cmp_") || cmp["encrypted_content"] == "" {
		t.Fatalf("compaction item: %v", cmp)
	}

	// Continued with the compacted window: the kept messages (30 and 1
	// words), the summary, and the new question, each framed.
	window := append(append([]any{}, out...), map[string]any{"role": "user", "content": "three"})
	next, _ := json.Marshal(map[string]any{"model": "sim-small", "input": window})
	_, u3, _ := postResponses(t, base, "/v1/responses", key, string(next))
	if want := (30 + 4) + (1 + 4) + (summary + 4) + (2 + 4); u3.Input != want {
		t.Fatalf("after compaction: input %d, want %d", u3.Input, want)
	}
	// A compaction item the sim did not write counts as its JSON, like any
	// unknown item.
	cmp["encrypted_content"] = "gAAAAABforeign"
	foreign, _ := json.Marshal(map[string]any{"model": "sim-small", "input": []any{cmp}})
	_, u4, _ := postResponses(t, base, "/v1/responses", key, string(foreign))
	if want := int64(CountTokens(compactJSON(must(json.Marshal(cmp)))) + 4); u4.Input != want {
		t.Fatalf("foreign compaction: input %d, want %d", u4.Input, want)
	}

	// The compaction of an unknown response is OpenAI's 400.
	status, _, got := post(t, base, "/v1/responses/compact", `{"model":"sim-small","previous_response_id":"resp_nope","input":[]}`, "Authorization", "Bearer "+key)
	if status != 400 {
		t.Fatalf("compact of an unknown response: %d %s", status, got)
	}
	wantOpenAIError(t, got, "Previous response with id 'resp_nope' not found.", "previous_response_id", "previous_response_not_found")
	if status, _, got := post(t, base, "/v1/responses/compact", `{"model":"sim-small","input":[]}`); status != 400 {
		t.Fatalf("compact of nothing: %d %s", status, got)
	}

	if b := s.Bill(); b.Calls != 5 || b.USD != billOf(u1, u2, uc, u3, u4) {
		t.Fatalf("bill %d calls %s, want 5 calls %s", b.Calls, b.USD, billOf(u1, u2, uc, u3, u4))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestResponsesChainsConcurrent: chains continued at the same time under
// several keys each see their own context only.
func TestResponsesChainsConcurrent(t *testing.T) {
	_, base := startSim(t, Config{})
	const chains, turns = 8, 5
	errs := make(chan error, chains)
	for c := range chains {
		go func() {
			key := fmt.Sprintf("sk-%d", c)
			prev, want := "", int64(0)
			for i := range turns {
				body := fmt.Sprintf(`{"model":"sim-small","input":"turn %d of %d"}`, i, c)
				if prev != "" {
					body = fmt.Sprintf(`{"model":"sim-small","previous_response_id":%q,"input":"turn %d of %d"}`, prev, i, c)
				}
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				status := res.StatusCode
				var r struct {
					ID    string `json:"id"`
					Usage struct {
						Input  int64 `json:"input_tokens"`
						Output int64 `json:"output_tokens"`
					} `json:"usage"`
				}
				if status != 200 || json.Unmarshal(raw, &r) != nil {
					errs <- fmt.Errorf("chain %d turn %d: %d %s", c, i, status, raw)
					return
				}
				want += 4 + 4 // "turn i of c": four one-token words, framed
				if r.Usage.Input != want {
					errs <- fmt.Errorf("chain %d turn %d: %d input tokens, want %d", c, i, r.Usage.Input, want)
					return
				}
				want += r.Usage.Output + 4
				prev = r.ID
			}
			errs <- nil
		}()
	}
	for range chains {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
