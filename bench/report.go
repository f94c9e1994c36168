package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// scenarios is the order of the raw table.
var scenarios = []string{"floor", "floor-timeouts", "direct-sim", "proxy-miss", "gateway-miss", "gateway-miss-cached", "gateway-hit", "gateway-hit-no-ledger", "gateway-hit-log-warn", "gateway-hit-store", "nginx-hit", "gateway-idempotent-new-keys", "gateway-idempotent-replay"}

// WriteMarkdown writes the report: the raw figures of every scenario, then
// the benchmark table — each figure a ratio against its baseline of the same
// run, with the goal beside it.
func (r *Report) WriteMarkdown(w io.Writer) {
	mode := "non-streaming"
	if r.Stream {
		mode = "streaming (SSE)"
	}
	fmt.Fprintf(w, "## HTTP, %s, %d connections, %s per scenario, %s, zero-latency sim, each server its own process\n\n", r.API.label(), r.Conns, r.Duration, mode)
	if r.Stores != "" {
		fmt.Fprintf(w, "Gateways' stores: %s.\n\n", r.Stores)
	}
	if r.StoresMeasured {
		fmt.Fprintf(w, "| scenario | body | requests/s | errors | server CPU / request | its stores' CPU / request |\n|---|---|---:|---:|---:|---:|\n")
	} else {
		fmt.Fprintf(w, "| scenario | body | requests/s | errors | server CPU / request |\n|---|---|---:|---:|---:|\n")
	}
	for _, b := range r.Bodies {
		for _, sc := range scenarios {
			res, ok := r.Results[sc+"/"+b.Label]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | %s (%d B, %d msgs) | %.0f | %d | %.1f µs |", sc, b.Label, b.Bytes, b.Messages, res.RPS(), res.Errors, float64(res.CPUPerReq)/1e3)
			switch {
			case !r.StoresMeasured:
			case strings.HasPrefix(sc, "gateway-"):
				fmt.Fprintf(w, " %.1f µs |", float64(res.StorePerReq())/1e3)
			default:
				fmt.Fprintf(w, " — |")
			}
			fmt.Fprintln(w)
		}
	}
	if r.StoresMeasured {
		fmt.Fprintf(w, "\nThe stores' CPU is that of every local PostgreSQL and Redis server process over the scenario, whatever else they served meanwhile.\n")
	}

	fmt.Fprintf(w, "\n## Figures (same-run ratios)\n\n| figure | measured | raw | goal |\n|---|---:|---|---|\n")
	for _, b := range r.Bodies {
		l := b.Label
		hit, floor := r.Results["gateway-hit/"+l], r.Results["floor/"+l]
		fmt.Fprintf(w, "| hit CPU/request ÷ floor, %s | %s | %.1f µs ÷ %.1f µs | %s |\n", l,
			ratio(float64(hit.CPUPerReq), float64(floor.CPUPerReq)), us(hit.CPUPerReq), us(floor.CPUPerReq), goal(b, "≤ 1.2×", "≤ 1.1×"))
		if ft, ok := r.Results["floor-timeouts/"+l]; ok {
			fmt.Fprintf(w, "| hit CPU/request ÷ floor with serve's ReadHeaderTimeout and IdleTimeout, %s | %s | %.1f µs ÷ %.1f µs (that floor ÷ the bare one: %s) | |\n", l,
				ratio(float64(hit.CPUPerReq), float64(ft.CPUPerReq)), us(hit.CPUPerReq), us(ft.CPUPerReq), ratio(float64(ft.CPUPerReq), float64(floor.CPUPerReq)))
		}
		miss, proxy := r.Results["gateway-miss/"+l], r.Results["proxy-miss/"+l]
		fmt.Fprintf(w, "| miss throughput ÷ bare ReverseProxy, %s | %s | %.0f ÷ %.0f req/s (CPU %s) | %s |\n", l,
			ratio(miss.RPS(), proxy.RPS()), miss.RPS(), proxy.RPS(), ratio(float64(miss.CPUPerReq), float64(proxy.CPUPerReq)), goal(b, "≥ 0.95×", "≥ 1.0×"))
		if mc, ok := r.Results["gateway-miss-cached/"+l]; ok {
			fmt.Fprintf(w, "| miss with the cache on ÷ off (throughput), %s | %s | %.0f ÷ %.0f req/s (CPU %.1f ÷ %.1f µs) | |\n", l,
				ratio(mc.RPS(), miss.RPS()), mc.RPS(), miss.RPS(), us(mc.CPUPerReq), us(miss.CPUPerReq))
		}
		nl := r.Results["gateway-hit-no-ledger/"+l]
		fmt.Fprintf(w, "| hit throughput ledger on ÷ off, %s | %s | %.0f ÷ %.0f req/s (CPU %.1f ÷ %.1f µs) | ≥ 0.93× |\n", l,
			ratio(hit.RPS(), nl.RPS()), hit.RPS(), nl.RPS(), us(hit.CPUPerReq), us(nl.CPUPerReq))
		if wr, ok := r.Results["gateway-hit-log-warn/"+l]; ok {
			fmt.Fprintf(w, "| hit CPU/request access log on ÷ --log-level warn, %s | %s | %.1f ÷ %.1f µs (req/s %.0f ÷ %.0f) | |\n", l,
				ratio(float64(hit.CPUPerReq), float64(wr.CPUPerReq)), us(hit.CPUPerReq), us(wr.CPUPerReq), hit.RPS(), wr.RPS())
		}
		if hs, ok := r.Results["gateway-hit-store/"+l]; ok {
			from := r.CacheStore
			if from == "" {
				from = "the database"
			}
			fmt.Fprintf(w, "| hit CPU/request from %s ÷ from memory, %s | %s | %.1f ÷ %.1f µs (req/s %.0f ÷ %.0f) | |\n", from, l,
				ratio(float64(hs.CPUPerReq), float64(hit.CPUPerReq)), us(hs.CPUPerReq), us(hit.CPUPerReq), hs.RPS(), hit.RPS())
		}
		if ng, ok := r.Results["nginx-hit/"+l]; ok {
			fmt.Fprintf(w, "| hit throughput ÷ nginx proxy_cache keyed on the body, %s | %s | %.0f ÷ %.0f req/s (CPU %.1f ÷ %.1f µs) | %s |\n", l,
				ratio(hit.RPS(), ng.RPS()), hit.RPS(), ng.RPS(), us(hit.CPUPerReq), us(ng.CPUPerReq), goal(b, "≥ 1.0×", ""))
			// The same against the floor: what a bare net/http server
			// answering from memory, with no gateway work at all, gets
			// against nginx on this machine — the most any hit served by
			// net/http could.
			fmt.Fprintf(w, "| floor throughput ÷ nginx proxy_cache (net/http's own bound), %s | %s | %.0f ÷ %.0f req/s (CPU %.1f ÷ %.1f µs) | |\n", l,
				ratio(floor.RPS(), ng.RPS()), floor.RPS(), ng.RPS(), us(floor.CPUPerReq), us(ng.CPUPerReq))
		}
		idem := r.Results["gateway-idempotent-new-keys/"+l]
		fmt.Fprintf(w, "| idempotent new keys ÷ plain miss (throughput), %s | %s | %.0f ÷ %.0f req/s (CPU %.1f ÷ %.1f µs) | ≥ 0.6× |\n", l,
			ratio(idem.RPS(), miss.RPS()), idem.RPS(), miss.RPS(), us(idem.CPUPerReq), us(miss.CPUPerReq))
	}
	for _, f := range r.Fingerprint {
		g := ""
		if f.Size > 100<<10 {
			g = "≤ 2×"
		}
		fmt.Fprintf(w, "| fingerprint ÷ sha256.Sum256, %d B (in process, thread CPU time) | %.2f× | %.1f µs ÷ %.1f µs | %s |\n", f.Size, f.RatioToSHA256, f.FingerprintNs/1e3, f.SHA256Ns/1e3, g)
	}
	if a := r.Analyze; a != nil {
		fmt.Fprintf(w, "| analyze lines/s ÷ plain line reading, %d lines / %.1f MB (in process) | %s | %.0f ÷ %.0f lines/s | — (a figure, not a goal: every analyzed line needs a fingerprint, plain line reading does none; see the next row) |\n",
			a.Lines, float64(a.Bytes)/1e6, ratio(a.AnalyzeLPS, a.ReadLinesLPS), a.AnalyzeLPS, a.ReadLinesLPS)
		fmt.Fprintf(w, "| analyze lines/s ÷ its floor: line reading + one fingerprint per line on the same workers (ledger.FingerprintLines) | %s | %.0f ÷ %.0f lines/s | (1× is the floor) |\n",
			ratio(a.AnalyzeLPS, a.FloorLPS), a.AnalyzeLPS, a.FloorLPS)
	}
	if r.Profile != "" {
		fmt.Fprintf(w, "\nProfiles of the gateway processes: %s (go tool pprof -top <file>). Profiling costs CPU: read the ratios of a run without --profile.\n", r.Profile)
	}
}

func us(d interface{ Nanoseconds() int64 }) float64 { return float64(d.Nanoseconds()) / 1e3 }

// ratio formats a/b, or "—" when either side was not measured.
func ratio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a/b) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// goal picks the goal for the body: the 1 KB one for the small
// body, the 200 KB one for the large; a file body has none.
func goal(b BodyInfo, small, large string) string {
	switch b.Kind {
	case "small":
		return small
	case "large":
		return large
	}
	return ""
}
