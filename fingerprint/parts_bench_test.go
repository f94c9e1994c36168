//go:build linux

package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"testing"
	"time"
	"unicode/utf8"
)

// BenchmarkPartsCPU200KB times the parts of Compute at 200 KB in thread
// CPU time, taking turns: the whole-body UTF-8 check, the scan into the
// canonical text (UTF-8 check included, no hashing), the whole Compute
// and SHA-256 of the body. Each is reported in µs per call.
func BenchmarkPartsCPU200KB(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := Params{Shape: "chat", Tenant: "acme", Versions: "schema=3"}
	var tu, ts, tc, th time.Duration
	n := 0
	for b.Loop() {
		t0 := threadCPU()
		benchSink = utf8.Valid(body200KB)
		t1 := threadCPU()
		s := getScanner(body200KB, useSIMD)
		if err := s.document(roots["chat"], true); err != nil {
			b.Fatal(err)
		}
		putScanner(s)
		t2 := threadCPU()
		r, _ := Compute(p, body200KB)
		benchSink = r
		t3 := threadCPU()
		benchSink = sha256.Sum256(body200KB)
		t4 := threadCPU()
		tu, ts, tc, th = tu+t1-t0, ts+t2-t1, tc+t3-t2, th+t4-t3
		n++
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e3 }
	b.ReportMetric(us(tu), "utf8-µs")
	b.ReportMetric(us(ts), "scan-µs")
	b.ReportMetric(us(tc), "compute-µs")
	b.ReportMetric(us(th), "sha-µs")
	b.ReportMetric(float64(tc)/float64(th), "x-sha256-cpu")
}

// benchSIMDCPU alternates Compute (simd: with the assembly where it is
// used, from minSIMD bytes) with the generic path every other platform
// runs and with SHA-256 of the body, in thread CPU time, and reports each
// per call and their ratios: a same-run A/B the machine's load affects
// alike.
func benchSIMDCPU(b *testing.B, body []byte) {
	if !haveSIMD {
		b.Skip("no AVX2/BMI2")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := Params{Shape: "chat", Tenant: "acme", Versions: "schema=3"}
	reps := max(1, 64<<10/len(body))
	var ts, tg, th time.Duration
	n := 0
	for b.Loop() {
		t0 := threadCPU()
		for range reps {
			r, _ := Compute(p, body)
			benchSink = r
		}
		t1 := threadCPU()
		for range reps {
			r, _ := compute(p, body, false)
			benchSink = r
		}
		t2 := threadCPU()
		for range reps {
			benchSink = sha256.Sum256(body)
		}
		t3 := threadCPU()
		ts, tg, th = ts+t1-t0, tg+t2-t1, th+t3-t2
		n += reps
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e3 }
	b.ReportMetric(us(ts), "simd-µs")
	b.ReportMetric(us(tg), "generic-µs")
	b.ReportMetric(float64(tg)/float64(ts), "generic/simd")
	b.ReportMetric(float64(ts)/float64(th), "simd-x-sha256")
	b.ReportMetric(float64(tg)/float64(th), "generic-x-sha256")
}

func BenchmarkSIMDCPU200KB(b *testing.B) { benchSIMDCPU(b, body200KB) }
func BenchmarkSIMDCPU1KB(b *testing.B)   { benchSIMDCPU(b, body1KB) }
func BenchmarkSIMDCPULine(b *testing.B)  { benchSIMDCPU(b, bodyLine) }

// benchSpanCPU alternates Compute as main has it (the assembly string scan,
// no string index) with this branch's default (the string index), and
// SHA-256 of the body, in thread CPU time: a same-run A/B.
func benchSpanCPU(b *testing.B, body []byte) {
	if !haveSIMD {
		b.Skip("no AVX2/BMI2")
	}
	defer func() { noIndex = false }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := Params{Shape: "chat", Tenant: "acme", Versions: "schema=3"}
	reps := max(1, 64<<10/len(body))
	var t [3]time.Duration
	n := 0
	for b.Loop() {
		for k, off := range []bool{true, false} {
			noIndex = off
			t0 := threadCPU()
			for range reps {
				r, _ := Compute(p, body)
				benchSink = r
			}
			t[k] += threadCPU() - t0
		}
		t0 := threadCPU()
		for range reps {
			benchSink = sha256.Sum256(body)
		}
		t[2] += threadCPU() - t0
		n += reps
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e3 }
	b.ReportMetric(us(t[0]), "main-µs")
	b.ReportMetric(us(t[1]), "new-µs")
	b.ReportMetric(us(t[2]), "sha-µs")
	b.ReportMetric(float64(t[0])/float64(t[2]), "main-x-sha")
	b.ReportMetric(float64(t[1])/float64(t[2]), "new-x-sha")
	b.ReportMetric(float64(t[0])/float64(t[1]), "main/new")
}

func BenchmarkSpanCPU200KB(b *testing.B) { benchSpanCPU(b, body200KB) }
func BenchmarkSpanCPU1KB(b *testing.B)   { benchSpanCPU(b, body1KB) }
func BenchmarkSpanCPULine(b *testing.B)  { benchSpanCPU(b, bodyLine) }

// BenchmarkShapesCPU200KB takes turns scanning (no hashing) the 200 KB body
// as its generator writes it, the same content with every object's keys in
// order (json.Marshal of its decoded value: the same escapes), and that
// without the HTML escapes \u003c \u003e \u0026 (642 in this body), in
// thread CPU time. The differences are what the reordering of members and
// the rewritten escapes cost the scan: docs/design/0001-canonical-fingerprint.md.
func BenchmarkShapesCPU200KB(b *testing.B) {
	var v any
	if err := json.Unmarshal(body200KB, &v); err != nil {
		b.Fatal(err)
	}
	sorted, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	var plain bytes.Buffer
	e := json.NewEncoder(&plain)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		b.Fatal(err)
	}
	bodies := [][]byte{body200KB, sorted, bytes.TrimSpace(plain.Bytes())}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t [3]time.Duration
	n := 0
	for b.Loop() {
		for k, body := range bodies {
			t0 := threadCPU()
			s := getScanner(body, useSIMD)
			if err := s.document(roots["chat"], true); err != nil {
				b.Fatal(err)
			}
			putScanner(s)
			t[k] += threadCPU() - t0
		}
		n++
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e3 }
	b.ReportMetric(us(t[0]), "as-sent-µs")
	b.ReportMetric(us(t[1]), "keys-in-order-µs")
	b.ReportMetric(us(t[2]), "no-html-escapes-µs")
}
