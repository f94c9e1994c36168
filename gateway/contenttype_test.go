package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A cache hit answers with the original response's Content-Type byte for
// byte, parameters and spelling included.
func TestHitKeepsTheOriginalContentType(t *testing.T) {
	const ct = "application/json; charset=utf-8"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = []string{ct}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-small","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"content type"}]}`
	for i, want := range []string{"miss", "hit"} {
		res, _ := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"})
		if got := res.Header.Get("Groundhog-Cache"); got != want {
			t.Fatalf("call %d: Groundhog-Cache %q, want %q", i, got, want)
		}
		if got := res.Header["Content-Type"]; len(got) != 1 || got[0] != ct {
			t.Fatalf("call %d (%s): Content-Type %q, want %q", i, want, got, ct)
		}
	}
}
