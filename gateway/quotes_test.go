package gateway_test

import (
	"testing"

	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// A miss of a body large enough for the prompt-cache stage to walk with a
// quote bitmap hands the stage the fingerprint's (the stage runs: its
// header is on the answer); a hit and a small body's miss do not.
func TestMissSharesTheFingerprintsQuoteBitmap(t *testing.T) {
	h := newHarness(t)
	large := string(benchbody.Chat(64<<10, benchbody.Options{Model: "sim-small"}))
	small := string(benchbody.Chat(1<<10, benchbody.Options{Model: "sim-small"}))
	use := map[string]string{"Groundhog-Cache": "use"}
	for _, c := range []struct {
		name, body, cache string
		shared            int64
	}{
		{"large miss", large, "miss", 1},
		{"large hit", large, "hit", 0},
		{"small miss", small, "miss", 0},
	} {
		before := gateway.QuotesShared.Load()
		res, body := h.post("/v1/chat/completions", c.body, use)
		if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != c.cache {
			t.Fatalf("%s: status %d, Groundhog-Cache %q: %s", c.name, res.StatusCode, res.Header.Get("Groundhog-Cache"), body)
		}
		if res.Header.Get("Groundhog-Prompt-Cache") == "" && c.cache == "miss" {
			t.Fatalf("%s: no Groundhog-Prompt-Cache header: the stage did not run", c.name)
		}
		if got := gateway.QuotesShared.Load() - before; got != c.shared {
			t.Errorf("%s: %d bitmaps handed to the stage, want %d", c.name, got, c.shared)
		}
	}
}
