package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
)

// FingerprintResult compares fingerprint.Compute with sha256.Sum256 over the
// same bytes.
type FingerprintResult struct {
	Size          int
	FingerprintNs float64
	SHA256Ns      float64
	RatioToSHA256 float64
}

// fingerprintBench measures fingerprint.Compute against sha256.Sum256 over
// the same bytes (the benchmark bodies of internal/benchbody). The two
// alternate in short rounds, so on a shared, noisy machine both see the
// same conditions, and are timed in thread CPU time (on Linux), which
// leaves out the waits for a core; the ratio is of the total times.
func fingerprintBench() []FingerprintResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out []FingerprintResult
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
	for _, size := range []int{1 << 10, 200 << 10} {
		body := benchbody.Chat(size, benchbody.Options{Stream: true})
		reps := max(1, 256<<10/len(body))
		var fp, sh time.Duration
		n := 0
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); n += reps {
			t0 := threadCPU()
			for range reps {
				if _, err := fingerprint.Compute(p, body); err != nil {
					panic(err) // the generated body is valid
				}
			}
			t1 := threadCPU()
			for range reps {
				_ = sha256.Sum256(body)
			}
			t2 := threadCPU()
			fp += t1 - t0
			sh += t2 - t1
		}
		f, s := float64(fp)/float64(n), float64(sh)/float64(n)
		out = append(out, FingerprintResult{Size: len(body), FingerprintNs: f, SHA256Ns: s, RatioToSHA256: f / s})
	}
	return out
}

// AnalyzeResult compares ledger.Analyze with two baselines over the same
// request log: reading it line by line (the baseline), and its own
// floor, ledger.FingerprintLines — the same reading and workers doing only
// what every line needs, one fingerprint of its request.
type AnalyzeResult struct {
	Lines        int
	Bytes        int64
	AnalyzeLPS   float64 // lines per second, best of the rounds
	ReadLinesLPS float64
	FloorLPS     float64 // ledger.FingerprintLines
}

// analyzeBench writes a request log of n lines (ledgertest's workload) to
// dir and measures, in alternating rounds, bufio line reading, Analyze's
// floor (ledger.FingerprintLines) and Analyze over it; each keeps its best
// round.
func analyzeBench(ctx context.Context, dir string, n int) (*AnalyzeResult, error) {
	path := filepath.Join(dir, fmt.Sprintf("analyze-%d.jsonl", n))
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	size, err := ledgertest.WriteJSONL(f, ledgertest.Options{Calls: n, Seed: 11,
		Start: time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC), Span: 24*time.Hour - time.Minute})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	readLines := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, 1<<20)
		lines := 0
		for {
			_, err := br.ReadSlice('\n')
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			lines++
		}
		if lines != n {
			return fmt.Errorf("read %d lines, want %d", lines, n)
		}
		return nil
	}
	analyze := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, st, err := ledger.Analyze(ctx, f, ledger.AnalyzeOptions{})
		if err != nil {
			return err
		}
		if st.Calls != int64(n) {
			return fmt.Errorf("analyzed %d calls, want %d", st.Calls, n)
		}
		return nil
	}
	floor := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		got, err := ledger.FingerprintLines(ctx, f)
		if err != nil {
			return err
		}
		if got != int64(n) {
			return fmt.Errorf("fingerprinted %d requests, want %d", got, n)
		}
		return nil
	}
	best := func(fn func() error, d *time.Duration) error {
		t := time.Now()
		if err := fn(); err != nil {
			return err
		}
		if e := time.Since(t); *d == 0 || e < *d {
			*d = e
		}
		return nil
	}
	var rl, fl, an time.Duration
	for range 3 {
		if err := best(readLines, &rl); err != nil {
			return nil, err
		}
		if err := best(floor, &fl); err != nil {
			return nil, err
		}
		if err := best(analyze, &an); err != nil {
			return nil, err
		}
	}
	return &AnalyzeResult{Lines: n, Bytes: size, AnalyzeLPS: float64(n) / an.Seconds(),
		ReadLinesLPS: float64(n) / rl.Seconds(), FloorLPS: float64(n) / fl.Seconds()}, nil
}
