package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkChat measures the sim's cost per chat call in process, against a
// baseline handler that only reads the body, decodes it and writes a fixed
// JSON answer: the ratio says how much the simulation adds to a bare JSON
// endpoint.
func BenchmarkChat(b *testing.B) {
	small := `{"model":"sim-small","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello"}]}`
	long := `{"model":"sim-small","messages":[{"role":"system","content":"` + longText(8000, "word") + `"},{"role":"user","content":"Say hello"}]}`
	baseline := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v map[string]any
		json.Unmarshal(body, &v)
		writeJSON(w, http.StatusOK, map[string]any{"id": "x", "object": "chat.completion", "choices": []any{}})
	})
	for _, c := range []struct {
		name string
		h    http.Handler
		body string
	}{
		{"baseline/small", baseline, small},
		{"sim/small", New(Config{}), small},
		{"baseline/8k-prompt", baseline, long},
		{"sim/8k-prompt", New(Config{}), long},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(c.body))
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
