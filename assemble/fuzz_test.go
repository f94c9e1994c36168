package assemble

import (
	"encoding/json"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// FuzzAssemble: any tools, last step and state strings either give an
// EINVALID error or a valid JSON request whose prefix does not depend on
// the state, and never panic.
func FuzzAssemble(f *testing.F) {
	f.Add(`{"type":"function","function":{"name":"f"}}`, `{"role":"user","content":"hi"}`, "No duplicate charges", "chat", true)
	f.Add(`{"name":"f","input_schema":{}}`, `{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}`, "a\nb", "messages", true)
	f.Add(`{}`, `{"type":"message","role":"user","content":"x"}`, "<&>", "responses", false)
	f.Add(`[`, `{"a":1e400}`, "\x00", "chat", false)
	f.Fuzz(func(t *testing.T, tool, last, constraint, shape string, bp bool) {
		in := Input{Shape: groundhog.Shape(shape), Model: "m", Instructions: "be brief",
			Tools: []json.RawMessage{json.RawMessage(tool)}, LastStep: []json.RawMessage{json.RawMessage(last)},
			State: groundhog.WorkingState{Objective: "o", Constraints: []string{constraint}}, Breakpoints: bp}
		out, err := Assemble(in)
		if err != nil {
			if groundhog.ErrorCode(err) != groundhog.EINVALID {
				t.Fatalf("error code %q: %v", groundhog.ErrorCode(err), err)
			}
			return
		}
		if !json.Valid(out.Request) {
			t.Fatalf("invalid JSON: %s", out.Request)
		}
		in.State.Constraints = []string{constraint + " changed"}
		out2, err := Assemble(in)
		if err != nil || string(out2.Request[:out2.PrefixBytes]) != string(out.Request[:out.PrefixBytes]) {
			t.Fatalf("the prefix depends on the state: %v", err)
		}
	})
}
