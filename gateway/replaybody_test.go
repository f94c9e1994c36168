package gateway_test

import (
	"runtime"
	"testing"

	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// An idempotent replay gives its request buffer back, as a hit does: a
// client retrying a 200 KB call with its key does not cost the gateway a
// fresh buffer of its body's size per retry (and the collections that
// follow). TotalAlloc counts every goroutine's allocations (the test's own
// client, the ledger writer), so the fewest bytes of several batches are
// compared against the body's size.
func TestIdempotentReplayReusesItsBodyBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of the buffers put back")
	}
	h := newHarness(t)
	body := string(benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"}))
	key := map[string]string{"Idempotency-Key": "replay-buffer"}
	res, b := h.post("/v1/chat/completions", body, key)
	if res.StatusCode != 200 {
		t.Fatalf("first call: %d %s", res.StatusCode, b)
	}
	const batch = 8
	fewest := uint64(1 << 62)
	for range 5 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for range batch {
			res, b := h.post("/v1/chat/completions", body, key)
			if res.StatusCode != 200 || res.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d, replayed %q: %s", res.StatusCode, res.Header.Get("Idempotent-Replayed"), b)
			}
		}
		runtime.ReadMemStats(&ms)
		fewest = min(fewest, (ms.TotalAlloc-before)/batch)
	}
	if fewest > uint64(len(body))/2 {
		t.Fatalf("a replay of a %d-byte body allocates %d bytes: its buffer is not reused", len(body), fewest)
	}
	t.Logf("%d bytes allocated per replay of a %d-byte body", fewest, len(body))
}
