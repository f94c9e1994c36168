package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/realtraffic"
)

// recording is one recorded exchange of the real-traffic corpus: the
// request the client sent and the answer the provider gave.
type recording struct {
	id     string // source/cassette/NN
	route  string
	status int
	stream bool
	req    []byte
	resp   []byte
	meta   struct {
		Synthesized bool `json:"request_synthesized"`
	}
}

// simRoutes are the model-call routes the simulator serves.
var simRoutes = map[string]bool{
	"/v1/chat/completions": true, "/v1/responses": true, "/v1/responses/compact": true, "/v1/embeddings": true, "/v1/messages": true,
}

// loadRecordings reads the corpus index and the successful exchanges of
// the simulator's routes whose request is JSON.
func loadRecordings(t *testing.T, dir string) []recording {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recording
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		col := strings.Split(sc.Text(), "\t")
		if len(col) < 5 || !simRoutes[col[2]] || col[3] != "200" {
			continue
		}
		r := recording{id: col[0], route: col[2], status: 200, stream: col[4] == "true"}
		base := filepath.Join(dir, filepath.FromSlash(r.id))
		if r.req, err = os.ReadFile(base + ".req.json"); err != nil {
			continue // not a JSON request
		}
		if r.resp, err = os.ReadFile(base + ".resp"); err != nil {
			t.Fatal(err)
		}
		meta, err := os.ReadFile(base + ".meta.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(meta, &r.meta); err != nil {
			t.Fatalf("%s: meta: %v", r.id, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// simRequest returns the body to send the simulator for r: the recorded
// request, asking for a stream exactly when the recording is one (a
// synthesized request does not say).
func simRequest(r recording) (string, error) {
	var body map[string]any
	if err := json.Unmarshal(r.req, &body); err != nil {
		return "", err
	}
	if r.stream {
		body["stream"] = true
		if r.route == "/v1/chat/completions" {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
	} else {
		delete(body, "stream")
	}
	out, err := json.Marshal(body)
	return string(out), err
}

// conversation follows one recorded conversation (a cassette) through the
// simulator: the ids and compaction contents the provider answered and the
// simulator's answers in their place, so that a later request of the
// conversation that refers to them (previous_response_id, a compaction
// item sent back) refers to the simulator's.
type conversation struct {
	dir  string
	sims map[string]string // recorded → simulated
}

// next resets c when r starts another conversation.
func (c *conversation) next(r recording) {
	if dir := r.id[:strings.LastIndex(r.id, "/")]; dir != c.dir {
		c.dir, c.sims = dir, map[string]string{}
	}
}

// rewrite replaces the recorded ids of body by the simulator's.
func (c *conversation) rewrite(body string) string {
	for rec, sim := range c.sims {
		body = strings.ReplaceAll(body, rec, sim)
	}
	return body
}

// knows reports whether previous_response_id of body (already rewritten)
// names a response the simulator answered in this conversation.
func (c *conversation) knows(body string) bool {
	var b struct {
		Previous string `json:"previous_response_id"`
	}
	json.Unmarshal([]byte(body), &b)
	for _, sim := range c.sims {
		if sim == b.Previous {
			return true
		}
	}
	return false
}

// holdsSimCompaction reports whether body's input holds a compaction item
// the simulator wrote.
func holdsSimCompaction(body string) bool {
	var b struct {
		Input []responsesItem `json:"input"`
	}
	json.Unmarshal([]byte(body), &b)
	for _, it := range b.Input {
		if it.Type == "compaction" && isSimCompaction(it.EncryptedContent) {
			return true
		}
	}
	return false
}

// learn pairs the ids of a recorded answer with the simulator's: the
// response's id and each compaction item's id and encrypted_content.
func (c *conversation) learn(recorded, simulated []byte, stream bool) {
	ids := func(body []byte) []string {
		var objs []map[string]any
		if stream {
			evs, _ := readEvents(body)
			for _, ev := range evs {
				if r, ok := ev.data["response"].(map[string]any); ok && ev.name == "response.completed" {
					objs = append(objs, r)
				}
			}
		} else {
			var m map[string]any
			json.Unmarshal(body, &m)
			objs = append(objs, m)
		}
		var out []string
		for _, o := range objs {
			id, _ := o["id"].(string)
			out = append(out, id)
			items, _ := o["output"].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				if m["type"] == "compaction" {
					id, _ := m["id"].(string)
					enc, _ := m["encrypted_content"].(string)
					out = append(out, id, enc)
				}
			}
		}
		return out
	}
	rec, sim := ids(recorded), ids(simulated)
	for i := range min(len(rec), len(sim)) {
		if rec[i] != "" && sim[i] != "" {
			c.sims[rec[i]] = sim[i]
		}
	}
}

// fieldExceptions are recorded fields the simulator does not produce on
// purpose: each belongs to a feature it does not implement. A difference at
// a path containing one of them is excused (and counted).
var fieldExceptions = []struct{ path, reason string }{
	{".container", "Anthropic code-execution and skills containers: the simulator runs no provider-side code"},
	{".context_management", "Anthropic context management (server-side edits): not simulated"},
	{".iterations", "Anthropic server-side compaction and advisor iterations: not simulated"},
	{"{text}.citations", "citations come from documents and provider-run search, which the simulator does not run"},
	{".conversation", "OpenAI conversations: the simulator stores no state between calls"},
	{".moderation", "OpenAI moderation results: not simulated"},
	{".reasoning.generate_summary", "a deprecated alias of reasoning.summary that older API versions echoed"},
	{".text_tokens", "per-modality token counts of audio and image models: the simulator is text only"},
	{".image_tokens", "per-modality token counts of audio and image models: the simulator is text only"},
	{"{function_call}.namespace", "tool namespaces (tool search): not simulated"},
	{".text.format{json_schema}.description", "the simulator echoes the request's text options as sent"},
	{".text.verbosity", "the simulator echoes the request's text options as sent"},
	{"content_filter_results", "Azure OpenAI content filtering: not simulated"},
	{"prompt_filter_results", "Azure OpenAI content filtering: not simulated"},
}

// sequenceExceptions are recordings whose event sequence is not compared
// (their fields still are): a substring of the recording id and the reason.
var sequenceExceptions = []struct{ id, reason string }{
	{"openai-image-generation-tool", "provider-run image generation answers with an empty text message"},
}

// skipSequence says why r's event sequence is not compared, or "".
func skipSequence(r recording, evs []sseEvent) string {
	if r.meta.Synthesized {
		return "the step's request was not recorded (a later step of an agent loop whose streams the fixture concatenated)"
	}
	for _, ev := range evs {
		if ev.name == "error" || ev.name == "response.failed" {
			return "the provider ended the stream with its own error, which the simulator sends only under a Sim-Fault"
		}
	}
	for _, e := range sequenceExceptions {
		if strings.Contains(r.id, e.id) {
			return e.reason
		}
	}
	return ""
}

// eventExceptions are recorded events left out of the sequence comparison.
var eventExceptions = map[string]string{
	"ping":                                  "keep-alive, sent by the provider at any point (and dropped by some recordings)",
	"response.queued":                       "background mode: not simulated",
	"response.output_text.annotation.added": "annotations come from provider-run search and files, not simulated",
	"empty":                                 "a chat chunk with no choice and no usage (moderation results): not simulated",
}

// excused removes the paths of d that fieldExceptions excuse and returns
// how many it removed.
func (d *shapeDiff) excuse() int {
	n := 0
	keep := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			ok := true
			for _, e := range fieldExceptions {
				if strings.Contains(p, e.path) {
					ok = false
				}
			}
			if ok {
				out = append(out, p)
			} else {
				n++
			}
		}
		return out
	}
	d.missing, d.extra, d.types = keep(d.missing), keep(d.extra), keep(d.types)
	return n
}

// eventTokens returns the event sequence of a stream as comparable tokens,
// split into the frame (events of the whole answer) and, per output kind
// (Responses item type, Anthropic content block type), the events of the
// first output of that kind. Consecutive repeats are collapsed, as the
// number of deltas depends on the text.
func eventTokens(route string, evs []sseEvent) (frame []string, kinds map[string][]string) {
	kinds = map[string][]string{}
	push1 := func(seq []string, tok string) []string {
		if n := len(seq); n > 0 && seq[n-1] == tok {
			return seq
		}
		return append(seq, tok)
	}
	kindAt := map[string]string{}  // output index -> kind
	firstOf := map[string]string{} // kind -> its first output index
	push := func(seq []string, tok string) []string {
		if _, skip := eventExceptions[tok]; skip {
			return seq
		}
		if tok == "role+tool_calls" {
			// The API sends the role with the first tool-call delta or
			// in a chunk of its own: both forms are recorded.
			seq = push1(seq, "role")
			tok = "tool_calls"
		}
		if n := len(seq); n > 0 && seq[n-1] == tok {
			return seq
		}
		return append(seq, tok)
	}
	typeOf := func(v any) string {
		m, _ := v.(map[string]any)
		s, _ := m["type"].(string)
		return s
	}
	for _, ev := range evs {
		switch route {
		case "/v1/chat/completions":
			frame = push(frame, chatToken(ev))
			continue
		case "/v1/responses":
			idx, ok := ev.data["output_index"]
			if !ok {
				frame = push(frame, ev.name)
				continue
			}
			at := fmt.Sprint(idx)
			if ev.name == "response.output_item.added" {
				kindAt[at] = typeOf(ev.data["item"])
			}
			k := kindAt[at]
			if _, seen := firstOf[k]; !seen {
				firstOf[k] = at
			}
			if firstOf[k] == at {
				kinds[k] = push(kinds[k], ev.name)
			}
		case "/v1/messages":
			idx, ok := ev.data["index"]
			if !ok {
				frame = push(frame, ev.name)
				continue
			}
			at := fmt.Sprint(idx)
			if ev.name == "content_block_start" {
				kindAt[at] = typeOf(ev.data["content_block"])
			}
			k := kindAt[at]
			if _, seen := firstOf[k]; !seen {
				firstOf[k] = at
			}
			tok := ev.name
			if d := typeOf(ev.data["delta"]); d != "" {
				tok += "/" + d
			}
			if firstOf[k] == at {
				kinds[k] = push(kinds[k], tok)
			}
		}
	}
	return frame, kinds
}

// chatToken names a chat completion chunk by what it carries.
func chatToken(ev sseEvent) string {
	if ev.data == nil {
		return ev.name
	}
	choices, _ := ev.data["choices"].([]any)
	if len(choices) == 0 {
		if ev.data["usage"] != nil {
			return "usage"
		}
		return "empty"
	}
	c, _ := choices[0].(map[string]any)
	d, _ := c["delta"].(map[string]any)
	var parts []string
	if d["role"] != nil {
		parts = append(parts, "role")
	}
	if s, _ := d["content"].(string); s != "" {
		parts = append(parts, "content")
	}
	if d["tool_calls"] != nil {
		parts = append(parts, "tool_calls")
	}
	if c["finish_reason"] != nil {
		parts = append(parts, "finish")
	}
	if len(parts) == 0 {
		return "delta"
	}
	return strings.Join(parts, "+")
}

// chatAnswerKind says whether a chat stream answered with text or a tool call.
func chatAnswerKind(frame []string) string {
	for _, tok := range frame {
		if strings.Contains(tok, "tool_calls") {
			return "tool"
		}
	}
	return "text"
}

// TestSimMatchesRecordedShapes sends every recorded request of the
// simulator's routes (chat completions, Responses, embeddings, Anthropic
// messages; streamed or not) to the simulator and compares its answer with
// the provider's recorded answer: the same fields with the same JSON types
// in every object both have (values may differ), and the same event
// sequence for streams. See compareShapes for what counts as a difference.
func TestSimMatchesRecordedShapes(t *testing.T) {
	dir := realtraffic.Folder(t)
	recs := loadRecordings(t, dir)
	if len(recs) == 0 {
		t.Fatalf("no recordings of the simulator's routes under %s", dir)
	}
	known := map[string]shape{} // per route and stream form: the union of every recording
	wants := make([]shape, len(recs))
	wantEvs := make([][]sseEvent, len(recs))
	for i, r := range recs {
		sh, evs, err := bodyShape(r.route, r.resp, r.stream)
		if err != nil {
			t.Fatalf("%s: recorded answer: %v", r.id, err)
		}
		wants[i], wantEvs[i] = sh, evs
		if known[r.route] == nil {
			known[r.route] = shape{}
		}
		known[r.route].merge(sh)
	}
	var matched, excepted, excused, seqCompared, continued, compacted int
	s := New(Config{})
	var conv conversation
	for i, r := range recs {
		body, err := simRequest(r)
		if err != nil {
			t.Fatalf("%s: request: %v", r.id, err)
		}
		conv.next(r)
		body = conv.rewrite(body)
		status, raw := serveOnce(t, s, r.route, body)
		if status != 200 {
			if strings.Contains(string(raw), `"previous_response_not_found"`) && !conv.knows(body) {
				// The response it continues was made outside the
				// recording: the simulator rightly does not hold it.
				excepted++
				continue
			}
			t.Errorf("%s: the simulator answered %d: %s", r.id, status, raw)
			continue
		}
		conv.learn(r.resp, raw, r.stream)
		if conv.knows(body) {
			continued++
		}
		if holdsSimCompaction(body) {
			compacted++
		}
		got, gotEvs, err := bodyShape(r.route, raw, r.stream)
		if err != nil {
			t.Errorf("%s: simulated answer: %v", r.id, err)
			continue
		}
		ok := true
		d := compareShapes(wants[i], got, known[r.route])
		excused += d.excuse()
		if !d.empty() {
			t.Errorf("%s: the simulator's answer differs from the recording:%s", r.id, d)
			ok = false
		}
		if r.stream && skipSequence(r, wantEvs[i]) == "" {
			wf, wk := eventTokens(r.route, wantEvs[i])
			gf, gk := eventTokens(r.route, gotEvs)
			if r.route != "/v1/chat/completions" || chatAnswerKind(wf) == chatAnswerKind(gf) {
				seqCompared++
				if !slices.Equal(wf, gf) {
					t.Errorf("%s: event sequence\n got %v\nwant %v", r.id, gf, wf)
					ok = false
				}
			}
			for k, w := range wk {
				if g, both := gk[k]; both && !slices.Equal(w, g) {
					t.Errorf("%s: %s events\n got %v\nwant %v", r.id, k, g, w)
					ok = false
				}
			}
		}
		if ok {
			matched++
		}
	}
	t.Logf("recordings compared: %d; shapes matched: %d; streams whose event sequence was compared: %d; "+
		"continuations of a recorded response (previous_response_id) served: %d; requests sending back the simulator's compaction: %d; "+
		"exceptions: %d continuations of a response made outside the recording, %d field differences of features it does not simulate",
		len(recs), matched, seqCompared, continued, compacted, excepted, excused)
}
