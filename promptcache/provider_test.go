package promptcache

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// The provider's verdict is read from every form its answer takes.
func TestReadReply(t *testing.T) {
	ev := func(name, data string) groundhog.Event { return groundhog.Event{Name: name, Data: []byte(data)} }
	for _, c := range []struct {
		name   string
		shape  groundhog.Shape
		body   string
		events []groundhog.Event
		want   Reply
	}{
		{"anthropic miss", messages, `{"id":"msg_1","diagnostics":{"cache_miss_reason":{"type":"system_changed","cache_missed_input_tokens":812}}}`, nil, Reply{"msg_1", "system_changed"}},
		{"anthropic no divergence", messages, `{"id":"msg_2","diagnostics":{"cache_miss_reason":null}}`, nil, Reply{"msg_2", "none"}},
		{"anthropic not asked", messages, `{"id":"msg_3"}`, nil, Reply{"msg_3", ""}},
		{"anthropic stream", messages, "", []groundhog.Event{ev("message_start", `{"type":"message_start","message":{"id":"msg_4","diagnostics":{"cache_miss_reason":{"type":"tools_changed","cache_missed_input_tokens":5}}}}`), ev("message_stop", `{}`)}, Reply{"msg_4", "tools_changed"}},
		{"responses miss", responses, `{"id":"resp_1","prompt_cache_diagnostics":{"type":"cache_miss","reason":"tools_changed","cache_missed_tokens":900,"comparison_reusable_tokens":1200}}`, nil, Reply{"resp_1", "tools_changed"}},
		{"responses hit", responses, `{"id":"resp_2","prompt_cache_diagnostics":{"type":"cache_hit"}}`, nil, Reply{"resp_2", "cache_hit"}},
		{"responses stream", responses, "", []groundhog.Event{ev("response.created", `{"response":{"id":"resp_3"}}`), ev("response.completed", `{"type":"response.completed","response":{"id":"resp_3","prompt_cache_diagnostics":{"type":"cache_miss","reason":"input_changed","cache_missed_tokens":3}}}`)}, Reply{"resp_3", "input_changed"}},
		{"chat", chat, `{"id":"chatcmpl-1"}`, nil, Reply{}},
	} {
		if got := ReadReply(c.shape, []byte(c.body), c.events); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	o := Outcome{Result: Result{Break: true, Cause: CauseVolatileInPrefix}, Provider: "system_changed"}
	if got := o.Header(); got != "volatile_in_prefix; provider=system_changed" {
		t.Errorf("header %q", got)
	}
	if got := (Outcome{Provider: "none"}).Header(); got != "" {
		t.Errorf("no break: header %q", got)
	}
}

// The gateway names the chain's previous answer in a Responses body's
// prompt_cache_options, keeping every byte the client sent and any
// comparison the client named itself.
func TestAskComparison(t *testing.T) {
	for _, c := range []struct {
		name, body, prev, want string
		asked                  bool
	}{
		{"no options", `{"model":"m","input":"hi"}`, "resp_1", `{"model":"m","input":"hi","prompt_cache_options":{"comparison_response_id":"resp_1"}}`, true},
		{"options kept", `{"model":"m", "prompt_cache_options": {"mode":"explicit"} ,"input":"hi"}`, "resp_1", `{"model":"m", "prompt_cache_options": {"mode":"explicit","comparison_response_id":"resp_1"} ,"input":"hi"}`, true},
		{"empty options", `{"prompt_cache_options":{ },"input":"hi"}`, "resp_1", `{"prompt_cache_options":{"comparison_response_id":"resp_1" },"input":"hi"}`, true},
		{"null options", `{"prompt_cache_options":null,"input":"hi"}`, "resp_1", `{"prompt_cache_options":{"comparison_response_id":"resp_1"},"input":"hi"}`, true},
		{"client's comparison", `{"prompt_cache_options":{"comparison_response_id":"resp_9"},"input":"hi"}`, "resp_1", `{"prompt_cache_options":{"comparison_response_id":"resp_9"},"input":"hi"}`, false},
		{"first turn", `{"input":"hi"}`, "", `{"input":"hi"}`, false},
		{"not an object", `{"prompt_cache_options":"x","input":"hi"}`, "resp_1", `{"prompt_cache_options":"x","input":"hi"}`, false},
		{"trailing space", "{\"input\":\"hi\"}\n", "resp_\"1", "{\"input\":\"hi\",\"prompt_cache_options\":{\"comparison_response_id\":\"resp_\\\"1\"}}\n", true},
	} {
		got, asked := askProviderFor(responses, []byte(c.body), c.prev)
		if string(got) != c.want || asked != c.asked {
			t.Errorf("%s: %s (asked %v), want %s (%v)", c.name, got, asked, c.want, c.asked)
		}
	}
	if got, asked := askProviderFor(chat, []byte(`{"messages":[]}`), "chatcmpl-1"); string(got) != `{"messages":[]}` || asked {
		t.Errorf("chat: %s %v", got, asked)
	}
}
