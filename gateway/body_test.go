package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
)

// Request bodies are read into pooled buffers that a cache hit gives back.
// Many distinct bodies of every size class, each sent several times at once
// while others are misses in flight: a buffer reused too early would send
// another call's body upstream or answer with another call's response.
func TestPooledBodiesAcrossHitsAndMisses(t *testing.T) {
	h := newHarness(t)
	sizes := []int{200, 5 << 10, 70 << 10, 300 << 10}
	const perSize, repeats = 6, 4
	var bodies []string
	for _, n := range sizes {
		for k := 0; k < perSize; k++ {
			tag := fmt.Sprintf("body %d of %d bytes: ", k, n)
			pad := strings.Repeat(string(rune('a'+k)), max(n-len(tag), 1))
			bodies = append(bodies, `{"model":"sim-small","messages":[{"role":"user","content":"`+tag+pad+`"}]}`)
		}
	}
	got := make([][][]byte, len(bodies))
	for i := range got {
		got[i] = make([][]byte, repeats)
	}
	// Round 0 warms some entries so later rounds mix hits with misses.
	for i := 0; i < len(bodies); i += 2 {
		res, b := h.post("/v1/chat/completions", bodies[i], map[string]string{"Groundhog-Cache": "use"})
		if res.StatusCode != 200 {
			t.Fatalf("warm-up %d: %d %s", i, res.StatusCode, b)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(bodies)*repeats)
	for r := 0; r < repeats; r++ {
		for i, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hr, _ := http.NewRequest("POST", h.URL+"/v1/chat/completions", strings.NewReader(body))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Groundhog-Cache", "use")
				res, err := http.DefaultClient.Do(hr)
				if err == nil {
					defer res.Body.Close()
				}
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(res.Body)
				if res.StatusCode != 200 {
					errs <- fmt.Errorf("body %d: status %d: %s", i, res.StatusCode, b)
					return
				}
				if hash := res.Header.Get("Groundhog-Request-Hash"); hash != hashOf(t, "chat", body) {
					errs <- fmt.Errorf("body %d: Groundhog-Request-Hash %s is not its body's", i, hash)
					return
				}
				got[i][r] = b
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for i := range bodies {
		for r := 1; r < repeats; r++ {
			if !bytes.Equal(got[i][r], got[i][0]) {
				t.Fatalf("body %d: answer %d differs from answer 0:\n%s\n%s", i, r, got[i][r], got[i][0])
			}
		}
		for j := 0; j < i; j++ {
			if bytes.Equal(got[i][0], got[j][0]) {
				t.Fatalf("bodies %d and %d got the same answer: a body buffer was shared", i, j)
			}
		}
	}
	if calls := h.bill().Calls; calls != int64(len(bodies)) {
		t.Fatalf("provider saw %d calls for %d distinct bodies, want one each", calls, len(bodies))
	}
}

// A body without Content-Length (chunked) is read as it comes, bounded by
// max_body_bytes.
func TestChunkedBody(t *testing.T) {
	const limit = 4096
	h := newHarness(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = limit }))
	ok := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	big := `{"model":"sim-small","messages":[{"role":"user","content":"` + strings.Repeat("a", limit) + `"}]}`
	for _, c := range []struct {
		name, body string
		status     int
	}{{"within the limit", ok, 200}, {"over the limit", big, 413}, {"empty", "", 400}} {
		t.Run(c.name, func(t *testing.T) {
			// io.MultiReader hides the length: the client sends it chunked.
			req, _ := http.NewRequest("POST", h.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(c.body)))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, b)
			}
			if req.ContentLength != 0 && req.ContentLength != -1 {
				t.Fatalf("request had a Content-Length (%d): not a chunked test", req.ContentLength)
			}
		})
	}
}
