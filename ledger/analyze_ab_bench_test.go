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
