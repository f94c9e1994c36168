package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
)

// BenchmarkHitPath measures a cache hit through real loopback HTTP, with the
// ledger on (the default) and off (the same-run baseline of the ledger's
// cost). `groundhog bench` measures the same across processes.
func BenchmarkHitPath(b *testing.B) {
	for _, ledgerOn := range []bool{true, false} {
		name := "ledger=on"
		if !ledgerOn {
			name = "ledger=off"
		}
		b.Run(name, func(b *testing.B) {
			h := newHarness(b, withConfig(func(c *config.Config) { c.Ledger.Disabled = !ledgerOn }))
			body := `{"model":"sim-small","messages":[{"role":"user","content":"` + strings.Repeat("hit path ", 100) + `"}]}`
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			do := func() {
				req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Groundhog-Cache", "use")
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			do()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do()
				}
			})
		})
	}
}
