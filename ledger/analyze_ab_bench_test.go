package ledger

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkAnalyzeFieldsAB times, in one process with old and new taking
// turns (rounds of the whole file each), the parts of a line's parse this
// branch changed: parseUsage against parseUsageRef (the usage objects of
// BenchmarkAnalyze's file) and the remembered date against a fresh
// fastTimestamp (its timestamps). It reports the median ns per line of
// each, and new ÷ old.
func BenchmarkAnalyzeFieldsAB(b *testing.B) {
	path, _ := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var usages, stamps [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		scanObject(l, func(key, val []byte) error {
			switch string(key) {
			case "usage":
				usages = append(usages, val)
			case "timestamp":
				stamps = append(stamps, val)
			}
			return nil
		})
	}
	round := func(f func()) float64 {
		t0 := time.Now()
		f()
		return float64(time.Since(t0).Nanoseconds())
	}
	var uo, un, to, tn []float64
	var sink int64
	for b.Loop() {
		uo = append(uo, round(func() {
			for _, v := range usages {
				u, _ := parseUsageRef(v)
				sink += u.InputTokens
			}
		})/float64(len(usages)))
		un = append(un, round(func() {
			for _, v := range usages {
				u, _ := parseUsage(v)
				sink += u.InputTokens
			}
		})/float64(len(usages)))
		to = append(to, round(func() {
			for _, v := range stamps {
				ns, _ := fastTimestampFresh(v)
				sink += ns
			}
		})/float64(len(stamps)))
		var dc dayCache
		tn = append(tn, round(func() {
			for _, v := range stamps {
				ns, _ := dc.fastTimestamp(v)
				sink += ns
			}
		})/float64(len(stamps)))
	}
	med := func(x []float64) float64 { x = slices.Clone(x); slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(uo), "usage-old-ns")
	b.ReportMetric(med(un), "usage-new-ns")
	b.ReportMetric(med(to), "ts-old-ns")
	b.ReportMetric(med(tn), "ts-new-ns")
	b.ReportMetric(med(un)/med(uo), "usage-new/old")
	b.ReportMetric(med(tn)/med(to), "ts-new/old")
	if sink == 42 {
		b.Log(sink)
	}
}

// BenchmarkReorderBufAB times the reorder buffer against the heap-only one
// it replaced (heapBuf), in one process with old and new taking turns: the
// calls of BenchmarkAnalyze's file (timestamps in file order) pushed, and
// popped as Analyze releases them (5-minute window). It reports the
// median ns per line of each, and new ÷ old.
func BenchmarkReorderBufAB(b *testing.B) {
	path, _ := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var calls []pendingCall
	var dc dayCache
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		scanObject(l, func(key, val []byte) error {
			if string(key) == "timestamp" {
				ns, ok := dc.fastTimestamp(val)
				if !ok {
					b.Fatalf("line %d: timestamp %s", i+1, val)
				}
				calls = append(calls, pendingCall{t: ns, line: int64(i + 1)})
			}
			return nil
		})
	}
	window := int64(DefaultReorderWindow)
	var sink int64
	var old, cur []float64
	for b.Loop() {
		var hb heapBuf
		t0 := time.Now()
		maxSeen := int64(0)
		for i := range calls {
			hb.push(&calls[i])
			maxSeen = max(maxSeen, calls[i].t)
			for hb.len() > 0 && hb.minTime() <= maxSeen-window {
				sink += hb.pop().line
			}
		}
		for hb.len() > 0 {
			sink += hb.pop().line
		}
		old = append(old, float64(time.Since(t0).Nanoseconds())/float64(len(calls)))
		var rb reorderBuf
		t0 = time.Now()
		maxSeen = 0
		for i := range calls {
			rb.push(&calls[i])
			maxSeen = max(maxSeen, calls[i].t)
			for rb.len() > 0 && rb.minTime() <= maxSeen-window {
				sink -= rb.pop().line
			}
		}
		for rb.len() > 0 {
			sink -= rb.pop().line
		}
		cur = append(cur, float64(time.Since(t0).Nanoseconds())/float64(len(calls)))
	}
	if sink != 0 {
		b.Fatal("the two buffers popped different lines")
	}
	med := func(x []float64) float64 { x = slices.Clone(x); slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(old), "heap-ns")
	b.ReportMetric(med(cur), "run-ns")
	b.ReportMetric(med(cur)/med(old), "run/heap")
}
