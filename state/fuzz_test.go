package state_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/groundhog-ai/groundhog/state"
)

// FuzzParse: Parse never panics, and what it accepts renders to a
// canonical form that parses back to itself (render ∘ parse is a fixed
// point), so a stored state reads back byte for byte.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"objective":"Fix the webhook retry bug","constraints":["No duplicate charges","Rollback required"],"findings":["Worker may time out after downstream success"],"failed_approaches":["Blind retry duplicates the action"],"evidence":["src/webhooks.py","incident-1042"],"next_step":"Check downstream idempotency support"}`))
	f.Add([]byte(`{"constraints":[],"ext":{"a":{"b":[1,null]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := state.Parse(body, false)
		if err != nil {
			return
		}
		out := state.Render(s)
		if !json.Valid(out) {
			t.Fatalf("Render gave invalid JSON %q", out)
		}
		s2, err := state.Parse(out, true)
		if err != nil {
			t.Fatalf("rendered state %q does not parse: %v", out, err)
		}
		if again := state.Render(s2); !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point:\n%q\n%q", out, again)
		}
	})
}

// FuzzMergePatch: on valid JSON, MergePatch never fails or panics, gives
// valid JSON, and is idempotent (RFC 7396: applying a patch twice is
// applying it once); a state patched by it is either refused or valid.
func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"objective":"o","constraints":["c"],"ext":{"a":1}}`), []byte(`{"ext":{"a":null,"b":{"c":null}},"findings":["x"]}`))
	f.Add([]byte(`{"a":[1,2]}`), []byte(`[1]`))
	f.Add([]byte(`null`), []byte(`{"a":{"b":{"c":1}}}`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		if !json.Valid(doc) || !json.Valid(patch) {
			return
		}
		once, err := state.MergePatch(doc, patch)
		if err != nil {
			t.Fatalf("MergePatch(%q, %q): %v", doc, patch, err)
		}
		if !json.Valid(once) {
			t.Fatalf("MergePatch(%q, %q) = %q: invalid JSON", doc, patch, once)
		}
		twice, err := state.MergePatch(once, patch)
		if err != nil || !bytes.Equal(compact(t, twice), compact(t, once)) {
			t.Fatalf("not idempotent: %q then %q (%v)", once, twice, err)
		}
		if s, err := state.Parse(once, false); err == nil {
			if _, err := state.Parse(state.Render(s), true); err != nil {
				t.Fatalf("patched state renders unparseable: %v", err)
			}
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return c.Bytes()
}
