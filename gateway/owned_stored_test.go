package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/groundhog-ai/groundhog"
)

// storedProvider is the part of OpenAI's API that keeps what model calls
// make, as one provider account: Responses calls (stored unless store is
// false; a code interpreter tool with an "auto" container makes one) and
// the stored responses' get, delete, input items and cancel; chat calls
// (stored when store is true) and the stored completions' list, get,
// update, delete and messages; containers' create, list, get, delete and
// files. Both calls answer a body or a stream. It records every request it
// receives, as the provider would see them.
type storedProvider struct {
	mu         sync.Mutex
	n          int
	responses  map[string]map[string]any
	inputs     map[string]any
	chats      []map[string]any // stored completions, in creation order
	containers []map[string]any
	seen       []string
	// hold, when set, holds a streamed Responses call whose input is
	// "hold" after its response.created event until it is closed.
	hold chan struct{}
}

func newStoredProvider(t *testing.T) (*storedProvider, string) {
	p := &storedProvider{responses: map[string]map[string]any{}, inputs: map[string]any{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *storedProvider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

func (p *storedProvider) next(prefix string) string {
	p.n++
	return prefix + strconv.Itoa(p.n)
}

func findID(items []map[string]any, id string) int {
	return slices.IndexFunc(items, func(it map[string]any) bool { return it["id"] == id })
}

func listPage(items []map[string]any, r *http.Request) map[string]any {
	start := 0
	if after := r.URL.Query().Get("after"); after != "" {
		start = findID(items, after) + 1
	}
	limit := 20
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil {
		limit = n
	}
	end := min(start+limit, len(items))
	data := slices.Clone(items[start:end])
	page := map[string]any{"object": "list", "data": data, "has_more": end < len(items), "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		page["first_id"], page["last_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	return page
}

func (p *storedProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, r.Method+" "+r.URL.RequestURI())
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		b, _ := json.Marshal(msg)
		fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":null,"code":null}}`, b)
	}
	events := func(evs ...any) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			if m, ok := ev.(map[string]any); ok && m["type"] != nil {
				fmt.Fprintf(w, "event: %s\n", m["type"])
			}
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
	}
	var body map[string]any
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	switch {
	case path == "responses" && r.Method == http.MethodPost:
		if prev, ok := body["previous_response_id"].(string); ok && p.responses[prev] == nil {
			notFound(fmt.Sprintf("Previous response with id '%s' not found.", prev))
			return
		}
		id := p.next("resp_")
		output := []any{map[string]any{"id": p.next("msg_"), "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "ok", "annotations": []any{}}}}}
		tools, _ := body["tools"].([]any)
		for _, tl := range tools {
			tool, _ := tl.(map[string]any)
			if tool["type"] != "code_interpreter" {
				continue
			}
			cntr, named := tool["container"].(string)
			if !named {
				cntr = p.next("cntr_")
				p.containers = append(p.containers, map[string]any{"id": cntr, "object": "container", "name": "auto", "status": "running", "created_at": 1700000000})
			} else if findID(p.containers, cntr) < 0 {
				notFound(fmt.Sprintf("Container with id '%s' not found.", cntr))
				return
			}
			output = append([]any{map[string]any{"id": p.next("ci_"), "type": "code_interpreter_call", "status": "completed",
				"code": "print(1)", "container_id": cntr, "outputs": []any{}}}, output...)
		}
		store := body["store"] != false
		resp := map[string]any{"id": id, "object": "response", "created_at": 1700000000, "status": "completed", "model": body["model"],
			"output": output, "store": store, "previous_response_id": body["previous_response_id"], "background": body["background"] == true,
			"usage": map[string]any{"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
		if body["background"] == true {
			resp["status"], resp["output"] = "queued", []any{}
		}
		if store {
			p.responses[id], p.inputs[id] = resp, body["input"]
		}
		if body["stream"] != true {
			reply(resp)
			return
		}
		created := map[string]any{}
		for k, v := range resp {
			created[k] = v
		}
		created["status"], created["output"] = "in_progress", []any{}
		events(map[string]any{"type": "response.created", "sequence_number": 0, "response": created})
		if body["input"] == "hold" && p.hold != nil {
			w.(http.Flusher).Flush()
			p.mu.Unlock()
			<-p.hold
			p.mu.Lock()
		}
		events(map[string]any{"type": "response.completed", "sequence_number": 1, "response": resp})
	case strings.HasPrefix(path, "responses/"):
		id, sub, _ := strings.Cut(strings.TrimPrefix(path, "responses/"), "/")
		resp := p.responses[id]
		if resp == nil {
			notFound(fmt.Sprintf("Response with id '%s' not found.", id))
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			reply(resp)
		case sub == "" && r.Method == http.MethodDelete:
			delete(p.responses, id)
			reply(map[string]any{"id": id, "object": "response", "deleted": true})
		case sub == "input_items" && r.Method == http.MethodGet:
			item := map[string]any{"id": "msg_in_" + id, "type": "message", "role": "user", "status": "completed",
				"content": []any{map[string]any{"type": "input_text", "text": p.inputs[id]}}}
			reply(map[string]any{"object": "list", "data": []any{item}, "first_id": item["id"], "last_id": item["id"], "has_more": false})
		case sub == "cancel" && r.Method == http.MethodPost:
			resp["status"] = "cancelled"
			reply(resp)
		default:
			notFound("no route " + r.URL.Path)
		}
	case path == "chat/completions" && r.Method == http.MethodPost:
		id := p.next("chatcmpl-")
		msg := map[string]any{"role": "assistant", "content": "ok", "refusal": nil}
		cc := map[string]any{"id": id, "object": "chat.completion", "created": 1700000000, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop", "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}, "metadata": body["metadata"]}
		if body["store"] == true {
			cc["request_messages"] = body["messages"]
			p.chats = append(p.chats, cc)
		}
		if body["stream"] != true {
			reply(cc)
			return
		}
		chunk := func(choices []any, usage any) map[string]any {
			return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": body["model"], "choices": choices, "usage": usage}
		}
		events(chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": nil}}, nil),
			chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, nil),
			chunk([]any{}, cc["usage"]))
		fmt.Fprint(w, "data: [DONE]\n\n")
	case path == "chat/completions" && r.Method == http.MethodGet:
		reply(listPage(p.chats, r))
	case strings.HasPrefix(path, "chat/completions/"):
		id, sub, _ := strings.Cut(strings.TrimPrefix(path, "chat/completions/"), "/")
		i := findID(p.chats, id)
		if i < 0 {
			notFound(fmt.Sprintf("Completion with id '%s' not found.", id))
			return
		}
		cc := p.chats[i]
		switch {
		case sub == "" && r.Method == http.MethodGet:
			reply(cc)
		case sub == "" && r.Method == http.MethodPost:
			cc["metadata"] = body["metadata"]
			reply(cc)
		case sub == "" && r.Method == http.MethodDelete:
			p.chats = slices.Delete(p.chats, i, i+1)
			reply(map[string]any{"id": id, "object": "chat.completion.deleted", "deleted": true})
		case sub == "messages" && r.Method == http.MethodGet:
			var data []map[string]any
			msgs, _ := cc["request_messages"].([]any)
			for j, m := range msgs {
				m, _ := m.(map[string]any)
				data = append(data, map[string]any{"id": fmt.Sprintf("%s-%d", id, j), "role": m["role"], "content": m["content"]})
			}
			reply(listPage(data, r))
		default:
			notFound("no route " + r.URL.Path)
		}
	case path == "containers" && r.Method == http.MethodPost:
		c := map[string]any{"id": p.next("cntr_"), "object": "container", "name": body["name"], "status": "running", "created_at": 1700000000}
		p.containers = append(p.containers, c)
		reply(c)
	case path == "containers" && r.Method == http.MethodGet:
		reply(listPage(p.containers, r))
	case strings.HasPrefix(path, "containers/"):
		id, sub, _ := strings.Cut(strings.TrimPrefix(path, "containers/"), "/")
		i := findID(p.containers, id)
		if i < 0 {
			notFound(fmt.Sprintf("Container with id '%s' not found.", id))
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			reply(p.containers[i])
		case sub == "" && r.Method == http.MethodDelete:
			p.containers = slices.Delete(p.containers, i, i+1)
			w.WriteHeader(http.StatusOK)
		case sub == "files" && r.Method == http.MethodGet:
			reply(map[string]any{"object": "list", "data": []any{}, "first_id": nil, "last_id": nil, "has_more": false})
		default:
			notFound("no route " + r.URL.Path)
		}
	default:
		notFound("no route " + r.URL.Path)
	}
}

// newStoredHarness is a gateway whose OpenAI upstream is a storedProvider,
// with two tenants; it returns their clients.
func newStoredHarness(t *testing.T, opts ...harnessOpt) (p *storedProvider, acme, globex openai.Client) {
	p, url := newStoredProvider(t)
	h := newHarness(t, append(opts, withUpstream(url+"/v1", "sk-provider"))...)
	return p, ownedOpenAI(h, createGatewayKey(t, h, "acme")), ownedOpenAI(h, createGatewayKey(t, h, "globex"))
}

// notOwnedUntouched asserts that err is a 404 in OpenAI's error shape
// naming id (on a resource route, OpenAI's own for a missing object) and
// that the provider received nothing since it had received n requests.
func notOwnedUntouched(t *testing.T, p *storedProvider, n int, err error, id, what string) {
	t.Helper()
	var api *openai.Error
	if !errors.As(err, &api) || api.StatusCode != http.StatusNotFound || !strings.Contains(api.Message, id) {
		t.Errorf("%s: want a 404 naming %s, got %v", what, id, err)
	}
	if got := p.requests(); len(got) != n {
		t.Errorf("%s reached the provider: %q", what, got[n:])
	}
}

func respParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
}

// TestOwnedStoredResponses: a response a Responses call stores — made by a
// body answer, a stream, a background call, or replayed by the tenant's
// own cache hit — is its tenant's: another tenant reading it, its input
// items, cancelling, deleting or continuing it (previous_response_id, also
// in a token count) gets OpenAI's 404 with nothing sent upstream, while
// the tenant that made it does all of these; a call with store false
// makes nothing the gateway records; a delete forgets the record.
func TestOwnedStoredResponses(t *testing.T) {
	ctx := context.Background()
	p, acme, globex := newStoredHarness(t)
	cached := option.WithHeader("Groundhog-Cache", "use")

	a, err := acme.Responses.New(ctx, respParams("remember 42"), cached)
	if err != nil || !strings.HasPrefix(a.ID, "resp_") {
		t.Fatalf("acme's response: %+v %v", a, err)
	}
	st := acme.Responses.NewStreaming(ctx, respParams("stream it"))
	var streamed string
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.created" {
			streamed = ev.Response.ID
		}
	}
	if err := st.Err(); err != nil || !strings.HasPrefix(streamed, "resp_") || streamed == a.ID {
		t.Fatalf("acme's streamed response %q: %v", streamed, err)
	}
	bgParams := respParams("take your time")
	bgParams.Background = openai.Bool(true)
	bg, err := acme.Responses.New(ctx, bgParams)
	if err != nil || bg.Status != "queued" {
		t.Fatalf("acme's background response: %+v %v", bg, err)
	}

	// The same call again is acme's cache hit: the same response, still
	// acme's. globex's identical call is its own, with its own id.
	hit, err := acme.Responses.New(ctx, respParams("remember 42"), cached)
	if err != nil || hit.ID != a.ID {
		t.Fatalf("acme's cache hit: %+v %v (want id %s)", hit, err, a.ID)
	}
	g, err := globex.Responses.New(ctx, respParams("remember 42"), cached)
	if err != nil || g.ID == a.ID {
		t.Fatalf("globex's response: %+v %v (acme's is %s)", g, err, a.ID)
	}

	for _, id := range []string{a.ID, streamed, bg.ID} {
		n := len(p.requests())
		_, err := globex.Responses.Get(ctx, id, responses.ResponseGetParams{})
		notOwnedUntouched(t, p, n, err, id, "globex reading acme's response")
		_, err = globex.Responses.InputItems.List(ctx, id, responses.InputItemListParams{})
		notOwnedUntouched(t, p, n, err, id, "globex listing acme's input items")
		_, err = globex.Responses.Cancel(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex cancelling acme's response")
		err = globex.Responses.Delete(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex deleting acme's response")
		cont := respParams("and then?")
		cont.PreviousResponseID = openai.String(id)
		_, err = globex.Responses.New(ctx, cont)
		notOwnedUntouched(t, p, n, err, id, "globex continuing acme's response")
		st := globex.Responses.NewStreaming(ctx, cont)
		for st.Next() {
		}
		notOwnedUntouched(t, p, n, st.Err(), id, "globex continuing acme's response in a stream")
		_, err = globex.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{
			Model: openai.String("gpt-4o-mini"), PreviousResponseID: openai.String(id)})
		notOwnedUntouched(t, p, n, err, id, "globex counting tokens after acme's response")
	}

	for _, id := range []string{a.ID, streamed} {
		if got, err := acme.Responses.Get(ctx, id, responses.ResponseGetParams{}); err != nil || got.ID != id {
			t.Errorf("acme reading its response %s: %+v %v", id, got, err)
		}
		if items, err := acme.Responses.InputItems.List(ctx, id, responses.InputItemListParams{}); err != nil || len(items.Data) != 1 {
			t.Errorf("acme listing its input items of %s: %+v %v", id, items, err)
		}
		cont := respParams("and then?")
		cont.PreviousResponseID = openai.String(id)
		if next, err := acme.Responses.New(ctx, cont); err != nil || next.PreviousResponseID != id {
			t.Errorf("acme continuing its response %s: %+v %v", id, next, err)
		}
	}
	if got, err := acme.Responses.Cancel(ctx, bg.ID); err != nil || got.Status != "cancelled" {
		t.Errorf("acme cancelling its background response: %+v %v", got, err)
	}
	if got, err := globex.Responses.Get(ctx, g.ID, responses.ResponseGetParams{}); err != nil || got.ID != g.ID {
		t.Errorf("globex reading its own response: %+v %v", got, err)
	}

	// store false: the provider keeps nothing and the gateway records
	// nothing, so the id is not found without asking.
	unstored := respParams("forget this")
	unstored.Store = openai.Bool(false)
	u, err := acme.Responses.New(ctx, unstored)
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.requests())
	_, err = acme.Responses.Get(ctx, u.ID, responses.ResponseGetParams{})
	notOwnedUntouched(t, p, n, err, u.ID, "acme reading a response it did not store")

	if err := acme.Responses.Delete(ctx, a.ID); err != nil {
		t.Fatalf("acme deleting its response: %v", err)
	}
	n = len(p.requests())
	_, err = acme.Responses.Get(ctx, a.ID, responses.ResponseGetParams{})
	notOwnedUntouched(t, p, n, err, a.ID, "acme reading its deleted response")
}

// TestOwnedStoredResponseMidStream: the client of a stream may use the
// response's id as soon as response.created reaches it, before the stream
// ends: the id is its tenant's already, and still not another tenant's.
func TestOwnedStoredResponseMidStream(t *testing.T) {
	ctx := context.Background()
	p, acme, globex := newStoredHarness(t)
	p.hold = make(chan struct{})
	st := acme.Responses.NewStreaming(ctx, respParams("hold"))
	defer st.Close()
	if !st.Next() || st.Current().Type != "response.created" {
		t.Fatalf("the stream's first event: %+v %v", st.Current(), st.Err())
	}
	id := st.Current().Response.ID
	if got, err := acme.Responses.Get(ctx, id, responses.ResponseGetParams{}); err != nil || got.ID != id {
		t.Errorf("acme reading its response mid-stream: %+v %v", got, err)
	}
	n := len(p.requests())
	_, err := globex.Responses.Cancel(ctx, id)
	notOwnedUntouched(t, p, n, err, id, "globex cancelling acme's response mid-stream")
	_, err = globex.Responses.Get(ctx, id, responses.ResponseGetParams{})
	notOwnedUntouched(t, p, n, err, id, "globex reading acme's response mid-stream")
	close(p.hold)
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
}

// slowRecords is the gateway's resource records with the writes of
// stored responses held until release is closed; asked receives each
// look-up of a stored response.
type slowRecords struct {
	groundhog.ResourceStore
	release chan struct{}
	asked   chan string
}

func (s *slowRecords) PutResource(ctx context.Context, r groundhog.Resource) error {
	if r.Kind == groundhog.ResourceKindOpenAIResponse {
		<-s.release
	}
	return s.ResourceStore.PutResource(ctx, r)
}

func (s *slowRecords) OwnedResources(ctx context.Context, tenant, kind string, names []string) ([]string, error) {
	own, err := s.ResourceStore.OwnedResources(ctx, tenant, kind, names)
	if kind == groundhog.ResourceKindOpenAIResponse {
		s.asked <- tenant
	}
	return own, err
}

// TestOwnedStoredResponseRecordInFlight: a client that uses a streamed
// response's id while its record is still being written is answered once
// the record is durable, not with a 404; another tenant is answered 404
// all the same.
func TestOwnedStoredResponseRecordInFlight(t *testing.T) {
	ctx := context.Background()
	slow := &slowRecords{release: make(chan struct{}), asked: make(chan string, 8)}
	p, acme, globex := newStoredHarness(t, func(s *setup) {
		s.resources = func(db groundhog.ResourceStore) groundhog.ResourceStore { slow.ResourceStore = db; return slow }
	})
	p.hold = make(chan struct{})
	st := acme.Responses.NewStreaming(ctx, respParams("hold"))
	defer st.Close()
	if !st.Next() || st.Current().Type != "response.created" {
		t.Fatalf("the stream's first event: %+v %v", st.Current(), st.Err())
	}
	id := st.Current().Response.ID

	n := len(p.requests())
	_, err := globex.Responses.Get(ctx, id, responses.ResponseGetParams{})
	notOwnedUntouched(t, p, n, err, id, "globex reading acme's response while its record is written")
	<-slow.asked // globex's look-up

	got := make(chan error, 1)
	go func() {
		r, err := acme.Responses.Get(ctx, id, responses.ResponseGetParams{})
		if err == nil && r.ID != id {
			err = fmt.Errorf("got response %s", r.ID)
		}
		got <- err
	}()
	if who := <-slow.asked; who != "acme" { // acme's look-up found no record yet
		t.Fatalf("look-up by %s", who)
	}
	close(slow.release)
	if err := <-got; err != nil {
		t.Errorf("acme reading its response while its record was written: %v", err)
	}
	close(p.hold)
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestOwnedStoredChatCompletions: a chat completion stored by a body or a
// streamed call (store true) is its tenant's: the list shows each tenant
// its own only; another tenant's get, update, delete and messages are
// OpenAI's 404 with nothing sent upstream; a call without store makes
// nothing the gateway records.
func TestOwnedStoredChatCompletions(t *testing.T) {
	ctx := context.Background()
	p, acme, globex := newStoredHarness(t)
	chat := func(cl openai.Client, text string, store bool) openai.ChatCompletionNewParams {
		params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
		if store {
			params.Store = openai.Bool(true)
		}
		return params
	}
	a1, err := acme.Chat.Completions.New(ctx, chat(acme, "one", true))
	if err != nil {
		t.Fatal(err)
	}
	st := acme.Chat.Completions.NewStreaming(ctx, chat(acme, "two", true))
	var a2 string
	for st.Next() {
		a2 = st.Current().ID
	}
	if err := st.Err(); err != nil || !strings.HasPrefix(a2, "chatcmpl-") {
		t.Fatalf("acme's streamed completion %q: %v", a2, err)
	}
	g1, err := globex.Chat.Completions.New(ctx, chat(globex, "three", true))
	if err != nil {
		t.Fatal(err)
	}
	unstored, err := acme.Chat.Completions.New(ctx, chat(acme, "four", false))
	if err != nil {
		t.Fatal(err)
	}

	ids := func(cl openai.Client) []string {
		page, err := cl.Chat.Completions.List(ctx, openai.ChatCompletionListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range page.Data {
			out = append(out, c.ID)
		}
		return out
	}
	if got, want := ids(acme), []string{a1.ID, a2}; !slices.Equal(got, want) {
		t.Errorf("acme's list: %q, want %q", got, want)
	}
	if got, want := ids(globex), []string{g1.ID}; !slices.Equal(got, want) {
		t.Errorf("globex's list: %q, want %q", got, want)
	}

	for _, id := range []string{a1.ID, a2} {
		n := len(p.requests())
		_, err := globex.Chat.Completions.Get(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex reading acme's completion")
		_, err = globex.Chat.Completions.Update(ctx, id, openai.ChatCompletionUpdateParams{Metadata: shared.Metadata{"who": "globex"}})
		notOwnedUntouched(t, p, n, err, id, "globex updating acme's completion")
		_, err = globex.Chat.Completions.Messages.List(ctx, id, openai.ChatCompletionMessageListParams{})
		notOwnedUntouched(t, p, n, err, id, "globex listing acme's messages")
		_, err = globex.Chat.Completions.Delete(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex deleting acme's completion")

		if got, err := acme.Chat.Completions.Get(ctx, id); err != nil || got.ID != id {
			t.Errorf("acme reading its completion %s: %+v %v", id, got, err)
		}
		if msgs, err := acme.Chat.Completions.Messages.List(ctx, id, openai.ChatCompletionMessageListParams{}); err != nil || len(msgs.Data) != 1 {
			t.Errorf("acme listing its messages of %s: %+v %v", id, msgs, err)
		}
	}
	if got, err := acme.Chat.Completions.Update(ctx, a1.ID, openai.ChatCompletionUpdateParams{Metadata: shared.Metadata{"who": "acme"}}); err != nil || got.Metadata["who"] != "acme" {
		t.Errorf("acme updating its completion: %+v %v", got, err)
	}
	n := len(p.requests())
	_, err = acme.Chat.Completions.Get(ctx, unstored.ID)
	notOwnedUntouched(t, p, n, err, unstored.ID, "acme reading a completion it did not store")

	if del, err := acme.Chat.Completions.Delete(ctx, a1.ID); err != nil || !del.Deleted {
		t.Fatalf("acme deleting its completion: %+v %v", del, err)
	}
	if got, want := ids(acme), []string{a2}; !slices.Equal(got, want) {
		t.Errorf("acme's list after the delete: %q, want %q", got, want)
	}
}

// TestOwnedContainers: a container made by its own API or by a code
// interpreter call with an "auto" container (a body or a stream) is its
// tenant's: another tenant's get, files, delete, or a call that runs code
// in it, is OpenAI's 404 with nothing sent upstream; the list shows each
// tenant its own only.
func TestOwnedContainers(t *testing.T) {
	ctx := context.Background()
	p, acme, globex := newStoredHarness(t)
	made, err := acme.Containers.New(ctx, openai.ContainerNewParams{Name: "scratch"})
	if err != nil || !strings.HasPrefix(made.ID, "cntr_") {
		t.Fatalf("acme's container: %+v %v", made, err)
	}
	code := func(container responses.ToolCodeInterpreterContainerUnionParam) responses.ResponseNewParams {
		params := respParams("run it")
		params.Tools = []responses.ToolUnionParam{{OfCodeInterpreter: &responses.ToolCodeInterpreterParam{Container: container}}}
		return params
	}
	auto := responses.ToolCodeInterpreterContainerUnionParam{OfCodeInterpreterToolAuto: &responses.ToolCodeInterpreterContainerCodeInterpreterContainerAutoParam{}}
	containerOf := func(out []responses.ResponseOutputItemUnion) string {
		for _, it := range out {
			if it.Type == "code_interpreter_call" {
				return it.ContainerID
			}
		}
		return ""
	}
	r, err := acme.Responses.New(ctx, code(auto))
	if err != nil {
		t.Fatal(err)
	}
	byCall := containerOf(r.Output)
	st := acme.Responses.NewStreaming(ctx, code(auto))
	var byStream string
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.completed" {
			byStream = containerOf(ev.Response.Output)
		}
	}
	if st.Err() != nil || byCall == "" || byStream == "" || byCall == byStream {
		t.Fatalf("containers made by code interpreter calls: %q %q %v", byCall, byStream, st.Err())
	}
	g, err := globex.Containers.New(ctx, openai.ContainerNewParams{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{made.ID, byCall, byStream} {
		n := len(p.requests())
		_, err := globex.Containers.Get(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex reading acme's container")
		_, err = globex.Containers.Files.List(ctx, id, openai.ContainerFileListParams{})
		notOwnedUntouched(t, p, n, err, id, "globex listing acme's container's files")
		err = globex.Containers.Delete(ctx, id)
		notOwnedUntouched(t, p, n, err, id, "globex deleting acme's container")
		_, err = globex.Responses.New(ctx, code(responses.ToolCodeInterpreterContainerUnionParam{OfString: openai.String(id)}))
		notOwnedUntouched(t, p, n, err, id, "globex running code in acme's container")

		if got, err := acme.Containers.Get(ctx, id); err != nil || got.ID != id {
			t.Errorf("acme reading its container %s: %+v %v", id, got, err)
		}
		if r, err := acme.Responses.New(ctx, code(responses.ToolCodeInterpreterContainerUnionParam{OfString: openai.String(id)})); err != nil || containerOf(r.Output) != id {
			t.Errorf("acme running code in its container %s: %+v %v", id, r, err)
		}
	}
	list := func(cl openai.Client) []string {
		page, err := cl.Containers.List(ctx, openai.ContainerListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range page.Data {
			out = append(out, c.ID)
		}
		return out
	}
	if got, want := list(acme), []string{made.ID, byCall, byStream}; !slices.Equal(got, want) {
		t.Errorf("acme's containers: %q, want %q", got, want)
	}
	if got, want := list(globex), []string{g.ID}; !slices.Equal(got, want) {
		t.Errorf("globex's containers: %q, want %q", got, want)
	}
	if err := acme.Containers.Delete(ctx, made.ID); err != nil {
		t.Fatalf("acme deleting its container: %v", err)
	}
}
