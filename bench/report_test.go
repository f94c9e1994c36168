package bench

import (
	"strings"
	"testing"
	"time"
)

// The analyze figure is printed against both baselines of the same run:
// bare line reading (a figure, no goal) and
// Analyze's own floor.
func TestReportAnalyzeBaselines(t *testing.T) {
	r := &Report{Results: map[string]Result{}, Analyze: &AnalyzeResult{
		Lines: 200000, Bytes: 85_500_000, AnalyzeLPS: 150000, ReadLinesLPS: 5_000_000, FloorLPS: 300000,
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| analyze lines/s ÷ plain line reading, 200000 lines / 85.5 MB (in process) | 0.03× | 150000 ÷ 5000000 lines/s | — (a figure, not a goal",
		"| analyze lines/s ÷ its floor: line reading + one fingerprint per line on the same workers (ledger.FingerprintLines) | 0.50× | 150000 ÷ 300000 lines/s |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks\n%s\n---\n%s", want, out)
		}
	}
}

// The floor with serve's server timeouts is a second baseline of the hit:
// its row appears when it was measured, with both ratios, and not otherwise.
func TestReportFloorWithTimeouts(t *testing.T) {
	body := BodyInfo{Label: "1KB", Kind: "small", Bytes: 1775, Messages: 5}
	r := &Report{Bodies: []BodyInfo{body}, Results: map[string]Result{
		"floor/1KB":       {Requests: 1000, Seconds: 1, CPU: 40 * time.Millisecond, CPUPerReq: 40 * time.Microsecond},
		"gateway-hit/1KB": {Requests: 1000, Seconds: 1, CPU: 60 * time.Millisecond, CPUPerReq: 60 * time.Microsecond},
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	if strings.Contains(b.String(), "floor with serve's") {
		t.Errorf("a row for a floor not measured:\n%s", b.String())
	}
	r.Results["floor-timeouts/1KB"] = Result{Requests: 1000, Seconds: 1, CPU: 48 * time.Millisecond, CPUPerReq: 48 * time.Microsecond}
	b.Reset()
	r.WriteMarkdown(&b)
	want := "| hit CPU/request ÷ floor with serve's ReadHeaderTimeout and IdleTimeout, 1KB | 1.25× | 60.0 µs ÷ 48.0 µs (that floor ÷ the bare one: 1.20×) | |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("report lacks\n%s\n---\n%s", want, b.String())
	}
	if !strings.Contains(b.String(), "| floor-timeouts | 1KB (1775 B, 5 msgs) | 1000 | 0 | 48.0 µs |") {
		t.Errorf("raw table lacks the floor with timeouts:\n%s", b.String())
	}
}

// Beside the hit ÷ nginx figure, the floor ÷ nginx figure of the same run
// shows what a bare net/http server gets against nginx.
func TestReportFloorAgainstNginx(t *testing.T) {
	body := BodyInfo{Label: "1KB", Kind: "small", Bytes: 1775, Messages: 5}
	r := &Report{Bodies: []BodyInfo{body}, Results: map[string]Result{
		"floor/1KB":       {Requests: 16000, Seconds: 1, CPU: 750 * time.Millisecond, CPUPerReq: 46900 * time.Nanosecond},
		"gateway-hit/1KB": {Requests: 12700, Seconds: 1, CPU: 772 * time.Millisecond, CPUPerReq: 60800 * time.Nanosecond},
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	if strings.Contains(b.String(), "nginx") {
		t.Errorf("nginx rows without an nginx run:\n%s", b.String())
	}
	r.Results["nginx-hit/1KB"] = Result{Requests: 20000, Seconds: 1, CPU: 760 * time.Millisecond, CPUPerReq: 38 * time.Microsecond}
	b.Reset()
	r.WriteMarkdown(&b)
	for _, want := range []string{
		"| hit throughput ÷ nginx proxy_cache keyed on the body, 1KB | 0.64× | 12700 ÷ 20000 req/s (CPU 60.8 ÷ 38.0 µs) | ≥ 1.0× |",
		"| floor throughput ÷ nginx proxy_cache (net/http's own bound), 1KB | 0.80× | 16000 ÷ 20000 req/s (CPU 46.9 ÷ 38.0 µs) | |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks\n%s\n---\n%s", want, b.String())
		}
	}
}

// When the gateways run on local PostgreSQL or Redis servers, the raw table
// shows those servers' CPU a request beside each gateway's, and a dash for
// the baselines, which use no store.
func TestReportStoresCPU(t *testing.T) {
	body := BodyInfo{Label: "1KB", Kind: "small", Bytes: 1775, Messages: 5}
	r := &Report{Bodies: []BodyInfo{body}, Results: map[string]Result{
		"proxy-miss/1KB":        {Requests: 1000, Seconds: 1, CPU: 200 * time.Millisecond, CPUPerReq: 200 * time.Microsecond},
		"gateway-hit-store/1KB": {Requests: 1000, Seconds: 1, CPU: 90 * time.Millisecond, CPUPerReq: 90 * time.Microsecond, StoreCPU: 45 * time.Millisecond},
	}, Stores: "PostgreSQL (a schema per gateway)"}
	var b strings.Builder
	r.WriteMarkdown(&b)
	if strings.Contains(b.String(), "stores' CPU") {
		t.Errorf("a stores' CPU column for stores not measured:\n%s", b.String())
	}
	r.StoresMeasured = true
	b.Reset()
	r.WriteMarkdown(&b)
	for _, want := range []string{
		"Gateways' stores: PostgreSQL (a schema per gateway).",
		"| gateway-hit-store | 1KB (1775 B, 5 msgs) | 1000 | 0 | 90.0 µs | 45.0 µs |",
		"| proxy-miss | 1KB (1775 B, 5 msgs) | 1000 | 0 | 200.0 µs | — |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks\n%s\n---\n%s", want, b.String())
		}
	}
}

// The hit read past the memory tier is named after where it is read from:
// the database, or Redis when the gateways have a Redis cache tier.
func TestReportNamesWhereAHitPastMemoryIsRead(t *testing.T) {
	body := BodyInfo{Label: "1KB", Kind: "small", Bytes: 1775, Messages: 5}
	for store, want := range map[string]string{
		"":      "| hit CPU/request from the database ÷ from memory, 1KB | 2.00× | 90.0 ÷ 45.0 µs (req/s 1000 ÷ 2000) | |",
		"Redis": "| hit CPU/request from Redis ÷ from memory, 1KB | 2.00× | 90.0 ÷ 45.0 µs (req/s 1000 ÷ 2000) | |",
	} {
		r := &Report{Bodies: []BodyInfo{body}, CacheStore: store, Results: map[string]Result{
			"gateway-hit/1KB":       {Requests: 2000, Seconds: 1, CPU: 90 * time.Millisecond, CPUPerReq: 45 * time.Microsecond},
			"gateway-hit-store/1KB": {Requests: 1000, Seconds: 1, CPU: 90 * time.Millisecond, CPUPerReq: 90 * time.Microsecond},
		}}
		var b strings.Builder
		r.WriteMarkdown(&b)
		if !strings.Contains(b.String(), want) {
			t.Errorf("store %q: report lacks\n%s\n---\n%s", store, want, b.String())
		}
	}
}
