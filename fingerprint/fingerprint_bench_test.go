package fingerprint

import (
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// chatBody returns the shared benchmark request (internal/benchbody): an
// agent transcript of at least size bytes, with "stream": true.
func chatBody(size int) []byte { return benchbody.Chat(size, benchbody.Options{Stream: true}) }

var (
	body1KB   = chatBody(1 << 10)
	body200KB = chatBody(200 << 10)
	benchSink any
)

func benchFingerprint(b *testing.B, body []byte) {
	p := Params{Shape: groundhog.ShapeChat, Tenant: "acme", Versions: "schema=3"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Compute(p, body)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = r
	}
}

func benchSHA256(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		benchSink = sha256.Sum256(body)
	}
}

// The fingerprint benchmarks and their baselines run over the same bytes:
// the goal is Fingerprint ≤ 3× SHA256 at 200 KB.
func BenchmarkFingerprint1KB(b *testing.B)   { benchFingerprint(b, body1KB) }
func BenchmarkFingerprint200KB(b *testing.B) { benchFingerprint(b, body200KB) }
func BenchmarkSHA256_1KB(b *testing.B)       { benchSHA256(b, body1KB) }
func BenchmarkSHA256_200KB(b *testing.B)     { benchSHA256(b, body200KB) }

// benchRatio alternates Compute and sha256.Sum256 over the same body and
// reports their time ratio ("x-sha256"): on a shared, noisy machine the two
// then see the same conditions, which separate benchmarks do not.
func benchRatio(b *testing.B, body []byte) {
	p := Params{Shape: groundhog.ShapeChat, Tenant: "acme", Versions: "schema=3"}
	reps := max(1, 64<<10/len(body)) // keep time.Now out of the measurement
	var fp, sh time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range reps {
			r, err := Compute(p, body)
			if err != nil {
				b.Fatal(err)
			}
			benchSink = r
		}
		t1 := time.Now()
		for range reps {
			benchSink = sha256.Sum256(body)
		}
		t2 := time.Now()
		fp += t1.Sub(t0)
		sh += t2.Sub(t1)
	}
	b.ReportMetric(float64(fp)/float64(sh), "x-sha256")
}

func BenchmarkRatio1KB(b *testing.B)   { benchRatio(b, body1KB) }
func BenchmarkRatio200KB(b *testing.B) { benchRatio(b, body200KB) }

// BenchmarkCanonicalize200KB is the canonicalizer alone (no hashing).
func BenchmarkCanonicalize200KB(b *testing.B) {
	b.SetBytes(int64(len(body200KB)))
	for b.Loop() {
		out, err := Canonicalize(body200KB)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = out
	}
}

func TestChatBodyIsRealistic(t *testing.T) {
	for _, b := range [][]byte{body1KB, body200KB} {
		if !json.Valid(b) {
			t.Fatal("benchmark body is not valid JSON")
		}
		r, err := Compute(Params{Shape: groundhog.ShapeChat}, b)
		if err != nil {
			t.Fatal(err)
		}
		if r.Model != "gpt-4o-mini" || !r.Stream {
			t.Errorf("Compute = %+v", r)
		}
	}
	if n := len(body200KB); n < 200<<10 || n > 210<<10 {
		t.Errorf("200KB body is %d bytes", n)
	}
	if n := len(body1KB); n < 1<<10 || n > 2<<10 {
		t.Errorf("1KB body is %d bytes", n)
	}
}

// bodyLine is a request as Analyze reads one from a log line (ledgertest's
// workload): about 200 bytes, where the fixed cost of a call shows.
var bodyLine = []byte(`{"model":"claude-haiku-4-5","max_tokens":1024,"system":"You are a careful analyst.","messages":[{"role":"user","content":"Document 0 of the quarterly filings: revenue, margins, outlook. "}]}`)

func BenchmarkFingerprintLine(b *testing.B) { benchFingerprint(b, bodyLine) }
