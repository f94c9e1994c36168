package ledger

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
)

// oldPathInput is a request log that exercises what the new path changed:
// several tenants and days, repeats (byte-identical ones among them, and
// the same request bytes under another tenant, shape or path, which must
// not share a fingerprint), lines out of order within the window and
// beyond it, bad lines of every kind, blank lines and unpriced models.
func oldPathInput(t testing.TB, calls int) []byte {
	var buf bytes.Buffer
	if _, err := ledgertest.WriteJSONL(&buf, ledgertest.Options{Calls: calls, Seed: 23,
		Tenants: []string{"acme", "beta", "gamma"}, ShuffleRate: 0.1, UnknownModelRate: 0.05}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	rng := rand.New(rand.NewPCG(5, 6))
	bad := []string{
		`{"timestamp":"2025-03-14T01:00:00Z","request":`,                           // invalid JSON
		`{"operation":"x","request":{"model":"gpt-4o-mini","messages":[]}}`,        // no timestamp
		`{"timestamp":"2025-03-14T01:00:00Z","operation":"x"}`,                     // no request
		`{"timestamp":"2025-03-14T01:00:00Z","request":"not an object"}`,           // rejected by the fingerprint
		`{"timestamp":"2025-03-14T01:00:00Z","request":{"model":1,"messages":[]}}`, // rejected by the fingerprint
		`{"timestamp":"2025-03-14T01:00:00Z","shape":"fax","request":{"messages":[]}}`,
		`{"timestamp":"2025-03-14T01:00:00Z","path":"/v1/nothing","request":{"messages":[]}}`,
		`{"timestamp":"yesterday","request":{"messages":[]}}`,
		`{"timestamp":"2025-03-14T01:00:00Z","usage":{"input_tokens":-1},"request":{"messages":[]}}`,
		`{"timestamp":"2025-03-14T01:00:00Z","cost_usd":"-1","request":{"messages":[]}}`,
		`{"timestamp":"2025-03-14T01:00:00Z","duration_ms":"x","request":{"messages":[]}}`,
		`{"timestamp":"2025-03-14T01:00:00Z","tenant":7,"request":{"messages":[]}}`,
		`{"timestamp":"1970-01-02T00:00:00Z","request":{"messages":[]}}`, // far before the window
	}
	// Calls in flight across midnight (UTC and New York's), repeated
	// just after it: in flight on the new day, but not repeats there.
	for _, day := range []string{"2025-03-14", "2025-03-15", "2025-03-16"} {
		for _, hm := range []string{"T23:59:59.5", "T03:59:59.5"} {
			at := day + hm + "Z"
			req := fmt.Sprintf(`"request":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"midnight %s"}]}`, at)
			start, _ := time.Parse(time.RFC3339Nano, at)
			after := start.Add(1500 * time.Millisecond).Format(time.RFC3339Nano)
			lines = insertByTime(lines, fmt.Sprintf(`{"timestamp":%q,"tenant":"acme",%s,"duration_ms":5000}`, at, req))
			lines = insertByTime(lines, fmt.Sprintf(`{"timestamp":%q,"tenant":"acme",%s,"duration_ms":10}`, after, req))
		}
	}
	var out []string
	for i, l := range lines {
		out = append(out, l)
		switch r := rng.IntN(100); {
		case r < 3:
			out = append(out, bad[rng.IntN(len(bad))])
		case r < 5:
			out = append(out, "", "  ")
		case r < 15 && i > 0:
			// An earlier line again, byte for byte but for its time (a
			// retry), sometimes under another tenant, shape or path: the
			// same request bytes with other Params.
			l := lines[rng.IntN(i)]
			l = strings.Replace(l, `"timestamp":"`, `"timestamp":"`+timestampOf(lines[i])+`","was":"`, 1)
			switch rng.IntN(5) {
			case 0:
				l = strings.Replace(l, `"tenant":"`, `"tenant":"x`, 1)
			case 1:
				l = strings.Replace(l, `{"timestamp"`, `{"shape":"responses","timestamp"`, 1)
			case 2:
				l = strings.Replace(l, `{"timestamp"`, `{"path":"/v1/messages","timestamp"`, 1)
			}
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// insertByTime inserts l before the first line of lines timestamped
// after it.
func insertByTime(lines []string, l string) []string {
	ts := timestampOf(l)
	for i, m := range lines {
		if timestampOf(m) > ts {
			return slices.Insert(lines, i, l)
		}
	}
	return append(lines, l)
}

// timestampOf is the "timestamp" string of a generated line.
func timestampOf(line string) string {
	i := strings.Index(line, `"timestamp":"`) + len(`"timestamp":"`)
	return line[i : i+strings.IndexByte(line[i:], '"')]
}

func TestAnalyzeMatchesOldPath(t *testing.T) {
	calls := 6_000
	if testing.Short() || raceEnabled {
		calls = 2_500
	}
	in := oldPathInput(t, calls)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []AnalyzeOptions{
		{SkipBad: true},
		{SkipBad: true, Location: ny},
		{SkipBad: true, GroupBy: GroupByTenant},
		{SkipBad: true, Tenant: "beta"},
		{SkipBad: true, Shape: groundhog.ShapeChat},
		{SkipBad: true, ReorderWindow: time.Second},
		{SkipBad: true, ReorderWindow: -1},
		{}, // stops at the first bad line
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			want, wst, werr := oldAnalyze(context.Background(), bytes.NewReader(in), o)
			got, gst, gerr := Analyze(context.Background(), bytes.NewReader(in), o)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("error %v, want %v", gerr, werr)
			}
			if !reflect.DeepEqual(gst, wst) {
				t.Fatalf("stats %+v, want %+v", gst, wst)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range min(len(got), len(want)) {
					if !reflect.DeepEqual(got[i], want[i]) {
						var a, b bytes.Buffer
						got[i].WriteCSV(&a)
						want[i].WriteCSV(&b)
						t.Fatalf("day %s differs\nnew:\n%s\nold:\n%s", want[i].Day, a.String(), b.String())
					}
				}
				t.Fatalf("%d reports, want %d", len(got), len(want))
			}
			if reflect.DeepEqual(o, AnalyzeOptions{SkipBad: true}) {
				// The input is what it claims to be.
				var calls, repeats, inFlight int64
				for _, r := range want {
					calls += r.Total.Calls
					repeats += r.Total.Repeats
					inFlight += r.Total.ConcurrentIdentical
				}
				if len(want) < 3 || wst.Skipped < 50 || repeats < calls/10 || inFlight == 0 {
					t.Fatalf("workload too tame: %d days, %d skipped, %d calls, %d repeats, %d in flight", len(want), wst.Skipped, calls, repeats, inFlight)
				}
			}
		})
	}
}
