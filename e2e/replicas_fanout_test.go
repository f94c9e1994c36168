package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Six subagents start together over one shared 10,000-token system prompt
// the provider has not cached (an Anthropic cache_control breakpoint on
// it, so the sim bills the write), three through each of two replicas. The
// first to arrive anywhere writes the prefix; the five others — on its
// replica and on the other — are held until it has started answering, and
// read it: the sim's bill shows the prefix written once and read five times.
// Without the cross-replica hold each replica's first request wrote it.
func TestReplicasFanOutWritesSharedPrefixOnce(t *testing.T) {
	// 1.5 s to the first token: the six requests all reach the gateways
	// long before the writer starts answering.
	cl := startClusterWith(t, 2, []string{"--first-token", "1500ms"}, nil)
	var sys strings.Builder
	sys.WriteString("You coordinate six research subagents. ")
	for i := range 10000 {
		fmt.Fprintf(&sys, "p%d ", i%1000) // one token a word
	}
	prefix, _ := json.Marshal(sys.String())
	before := simBill(t, cl.sim.URL)
	const n = 6
	res := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"sim-small","max_tokens":50,"system":[{"type":"text","text":%s,"cache_control":{"type":"ephemeral"}}],`+
				`"messages":[{"role":"user","content":"Subtask %d: research topic %d in depth."}]}`, prefix, i, i)
			res[i] = post(context.Background(), cl.replicas[i%2].URL+"/v1/messages", body,
				map[string]string{"anthropic-version": "2023-06-01", "Groundhog-Operation": "subagents"})
		}()
	}
	wg.Wait()
	var written, read int
	var p int64
	for i, r := range res {
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("call %d: %v %d %s", i, r.err, r.status, r.body)
		}
		var m struct {
			Usage struct {
				Read  int64 `json:"cache_read_input_tokens"`
				Write int64 `json:"cache_creation_input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		p = max(p, m.Usage.Read+m.Usage.Write)
		switch {
		case m.Usage.Write > 0 && m.Usage.Read == 0:
			written++
		case m.Usage.Read > 0 && m.Usage.Write == 0:
			read++
		}
		t.Logf("call %d via replica %d: %s", i, i%2, r.header.Get("Groundhog-Prompt-Cache"))
	}
	if p < 10000 {
		t.Fatalf("shared prefix is %d tokens, want ≥ 10,000", p)
	}
	bill := simBill(t, cl.sim.URL)
	writes, reads := bill.CacheWriteTokens-before.CacheWriteTokens, bill.CachedInputTokens-before.CachedInputTokens
	t.Logf("prefix %d tokens; sim bill: writes %d, reads %d", p, writes, reads)
	if written != 1 || read != n-1 {
		t.Errorf("%d calls wrote the prefix and %d read it; want 1 and %d", written, read, n-1)
	}
	if writes > p*11/10 || reads < (n-1)*p {
		t.Errorf("sim bill: writes %d, reads %d; want the %d-token prefix written once (≤ 1.1×) and read %d times", writes, reads, p, n-1)
	}
	// Each replica's first request asked Redis (the others were held behind
	// it in process): one claimed the prefix, the other found it busy.
	claims := map[string]int{}
	for _, r := range cl.replicas {
		res, err := http.Get(r.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			var answer string
			var v int
			if _, err := fmt.Sscanf(line, "groundhog_fan_out_claims_total{answer=%q} %d", &answer, &v); err == nil {
				claims[answer] += v
			}
		}
	}
	if claims["claimed"] != 1 || claims["busy"] != 1 || claims["error"] != 0 {
		t.Errorf("groundhog_fan_out_claims_total over both replicas: %v, want claimed 1, busy 1, no error", claims)
	}
}
