package fingerprint_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

var diffShapes = []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeEmbeddings, groundhog.ShapeMessages}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s: %s", groundhog.ErrorCode(err), err.Error())
}

// checkSame compares the scanner with the copy of the one it replaced
// (old_scan_test.go, old_compute_test.go): same hash, model and stream or
// same error for Compute under every shape, same canonical text or same
// error for Canonicalize. What the old scanner did not report (Store,
// Names, LetterEscapes) is checked against wantFacts.
func checkSame(t *testing.T, tenant string, body []byte) {
	t.Helper()
	for i, shape := range diffShapes {
		p := fingerprint.Params{Shape: shape, Tenant: tenant, Versions: "schema=3", Names: factNames, Top: factNames}
		got, gerr := fingerprint.Compute(p, body)
		p.Names, p.Top = nil, nil
		want, werr := oldCompute(p, body)
		if errText(gerr) != errText(werr) || got.Hash != want.Hash || got.Model != want.Model || got.Stream != want.Stream {
			t.Fatalf("Compute(%s, %q)\n new %+v %s\n old %+v %s", shape, body, got, errText(gerr), want, errText(werr))
		}
		if gerr == nil && i == 0 {
			checkFacts(t, body, got)
		}
	}
	got, gerr := fingerprint.Canonicalize(body)
	want, werr := oldCanonicalize(body)
	if errText(gerr) != errText(werr) || !bytes.Equal(got, want) {
		t.Fatalf("Canonicalize(%q)\n new %q %s\n old %q %s", body, got, errText(gerr), want, errText(werr))
	}
}

// FuzzDifferential: the rewritten scanner against the old one, byte for
// byte, error for error. Seeds: every seed of the other fuzz targets, the
// golden bodies and the benchmark bodies (see TestDifferentialSeeds).
func FuzzDifferential(f *testing.F) {
	for _, b := range diffSeedBodies(f) {
		f.Add("acme", b)
	}
	f.Fuzz(func(t *testing.T, tenant string, body []byte) {
		checkSame(t, tenant, body)
	})
}

// TestDifferentialSeeds runs the comparison over the larger bodies (the
// benchmark transcripts) and over every truncation of a mid-sized one, so
// the tail of the 8-byte loops and every error offset are compared even
// without -fuzz.
func TestDifferentialSeeds(t *testing.T) {
	for _, b := range diffSeedBodies(t) {
		checkSame(t, "acme", b)
	}
	b := benchbody.Chat(3<<10, benchbody.Options{})
	for i := range len(b) {
		checkSame(t, "t", b[:i])
	}
}

func diffSeedBodies(tb testing.TB) [][]byte {
	bodies := [][]byte{
		benchbody.Chat(1<<10, benchbody.Options{Stream: true}),
		benchbody.Chat(20<<10, benchbody.Options{}),
		benchbody.Chat(200<<10, benchbody.Options{Stream: true}),
	}
	for _, b := range reorderBodies {
		bodies = append(bodies, []byte(b))
	}
	for _, dir := range []string{"testdata/fuzz/FuzzCanonicalize", "testdata/fuzz/FuzzCompute", "testdata/golden"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			bodies = append(bodies, data)
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				// Corpus files hold Go literals; golden files JSON lines
				// whose "body" members are found by the scanner anyway.
				if lit, ok := bytes.CutPrefix(line, []byte("[]byte(")); ok {
					if u, err := strconv.Unquote(string(bytes.TrimSuffix(lit, []byte(")")))); err == nil {
						line = []byte(u)
					}
				}
				bodies = append(bodies, line)
			}
		}
	}
	return bodies
}

// TestDifferentialSeedsGeneric is TestDifferentialSeeds (the seeds, and
// the decimals and \u escapes of their own tests) on the generic path, the
// one every CPU without AVX2 runs: the assembly switched off.
func TestDifferentialSeedsGeneric(t *testing.T) {
	defer fingerprint.SetSIMD(false)()
	for _, b := range diffSeedBodies(t) {
		checkSame(t, "acme", b)
	}
	for _, tok := range []string{"0.2", "0.87", "-0.5", "0.10", "0.0000001", "0.000001", "123456789012345.5", "1234567890123456.5", "1.0", "-0.0"} {
		checkSame(t, "t", []byte(`{"model":"m","temperature":`+tok+`,"x":[`+tok+`]}`))
	}
}
