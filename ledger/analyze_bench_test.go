package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
)

// analyzeBenchFile is BenchmarkAnalyze's N-line request log.
func analyzeBenchFile(b *testing.B) (string, int) {
	n := benchCalls(b)
	return benchFile(b, fmt.Sprintf("groundhog-ledger-bench-%d.jsonl", n), func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := ledgertest.WriteJSONL(f, benchWorkload(n)); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}), n
}

// BenchmarkAnalyzeFloor is Analyze's own floor over BenchmarkAnalyze's
// file: the same reading and workers, one fingerprint per line and nothing
// else (FingerprintLines).
func BenchmarkAnalyzeFloor(b *testing.B) {
	path, n := analyzeBenchFile(b)
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		f, _ := os.Open(path)
		got, err := FingerprintLines(context.Background(), f)
		f.Close()
		if err != nil || got != int64(n) {
			b.Fatalf("%d requests, %v", got, err)
		}
	}
	b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "lines/s")
}

// BenchmarkAnalyzeParse is the workers' share of Analyze on one
// goroutine: every line of the file parsed (fields, shape, fingerprint,
// usage, cost), in ns per line.
func BenchmarkAnalyzeParse(b *testing.B) {
	path, n := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	p := newAnalyzer(AnalyzeOptions{}).newParser()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok, err := p.line(lines[i%n], int64(i%n+1)); !ok || err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAnalyzeFloorLine is BenchmarkAnalyzeParse's floor: the same
// lines, one fingerprint each (fingerprintLine).
func BenchmarkAnalyzeFloorLine(b *testing.B) {
	path, n := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	p := newAnalyzer(AnalyzeOptions{}).newParser()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.fingerprintLine(lines[i%n]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAnalyzeCollect is the serial collector's share of Analyze on
// one goroutine: the file's lines, parsed beforehand, pushed through the
// reorder buffer and counted (days, repeats, in-flight), in ns per line.
func BenchmarkAnalyzeCollect(b *testing.B) {
	path, n := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	p := newAnalyzer(AnalyzeOptions{}).newParser()
	calls := make([]pendingCall, n)
	for i, l := range lines {
		if calls[i], _, err = p.line(l, int64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var an *analyzer
	i := 0
	start := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/line") }()
	for b.Loop() {
		if i%n == 0 {
			if an != nil {
				an.flush()
			}
			an = newAnalyzer(AnalyzeOptions{})
		}
		c := calls[i%n]
		if err := an.push(&c); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAnalyzeCollectOld is BenchmarkAnalyzeCollect through the old
// collector (analyze_old_test.go: two Go maps, Accumulator.Add), for
// comparison in the same run.
func BenchmarkAnalyzeCollectOld(b *testing.B) {
	path, n := analyzeBenchFile(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	p := newAnalyzer(AnalyzeOptions{}).newParser()
	calls := make([]pendingCall, n)
	for i, l := range lines {
		if calls[i], _, err = p.line(l, int64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var an *oldAnalyzer
	i := 0
	start := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/line") }()
	for b.Loop() {
		if i%n == 0 {
			if an != nil {
				an.flush()
			}
			an = newOldAnalyzer(AnalyzeOptions{})
		}
		if err := an.push(calls[i%n]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
