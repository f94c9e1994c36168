package gateway_test

import (
	"strings"
	"testing"
)

// A streamed chat call gets the usage chunk exactly when it asks for it,
// on the miss and on the hit: also when the key is spelled with an escape
// (the provider reads "include\u005fusage" as include_usage), and not when
// the name only appears in the conversation's text.
func TestIncludeUsageAskedAsTheProviderReadsIt(t *testing.T) {
	h := newHarness(t)
	use := map[string]string{"Groundhog-Cache": "use"}
	for _, c := range []struct {
		name, options, text string
		usage               bool
	}{
		{"asked", `{"include_usage":true}`, "hello", true},
		{"asked with an escaped key", `{"include\u005fusage":true}`, "hello", true},
		{"not asked", `{"include_usage":false}`, "hello", false},
		{"only in the text", `null`, `please set include_usage for me`, false},
	} {
		body := `{"model":"sim-small","stream":true,"stream_options":` + c.options + `,"messages":[{"role":"user","content":"` + c.text + ` ` + c.name + `"}]}`
		for _, want := range []string{"miss", "hit"} {
			res, b := h.post("/v1/chat/completions", body, use)
			if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != want {
				t.Fatalf("%s: status %d, Groundhog-Cache %q, want %s: %s", c.name, res.StatusCode, res.Header.Get("Groundhog-Cache"), want, b)
			}
			got := false
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "data: {") && strings.Contains(line, `"choices":[]`) && strings.Contains(line, `"usage":{`) {
					got = true
				}
			}
			if got != c.usage {
				t.Errorf("%s (%s): usage chunk %v, want %v\n%s", c.name, want, got, c.usage, b)
			}
		}
	}
}
