package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
	"github.com/groundhog-ai/groundhog/pricing"
)

// logLine renders one request-log line.
func logLine(ts string, op, content string, extra string) string {
	return fmt.Sprintf(`{"timestamp":%q,"operation":%q,"request":{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}]}%s}`, ts, op, content, extra)
}

func analyze(t *testing.T, in string, o AnalyzeOptions) ([]*Report, AnalyzeStats) {
	t.Helper()
	reps, st, err := Analyze(context.Background(), strings.NewReader(in), o)
	if err != nil {
		t.Fatal(err)
	}
	return reps, st
}

func TestAnalyzeConcurrentVersusSequential(t *testing.T) {
	// An identical call that starts before the earlier one's timestamp +
	// duration_ms is concurrent; one that starts after it ended is only a
	// repeat. Both are repeats.
	in := strings.Join([]string{
		logLine("2025-03-14T10:00:00Z", "op", "a", `,"duration_ms":2000,"cost_usd":0.004`),
		logLine("2025-03-14T10:00:01.999Z", "op", "a", `,"duration_ms":10,"cost_usd":0.004`), // in flight: before 10:00:02
		logLine("2025-03-14T10:00:02Z", "op", "a", `,"duration_ms":10,"cost_usd":0.004`),     // the first ended at 10:00:02 exactly; the second at 02.009
		logLine("2025-03-14T10:00:05Z", "op", "a", `,"duration_ms":10,"cost_usd":0.004`),     // sequential
		logLine("2025-03-14T10:00:05.001Z", "op", "b", `,"duration_ms":5,"cost_usd":0.004`),  // different request
	}, "\n")
	reps, st := analyze(t, in, AnalyzeOptions{})
	if len(reps) != 1 || st.Calls != 5 {
		t.Fatalf("reports = %d, calls = %d", len(reps), st.Calls)
	}
	tot := reps[0].Total
	if tot.Repeats != 3 || tot.ConcurrentIdentical != 2 || tot.Distinct != 2 {
		t.Fatalf("repeats %d concurrent %d distinct %d; want 3 2 2", tot.Repeats, tot.ConcurrentIdentical, tot.Distinct)
	}
	// Offline calls had no cache: their repeats are shadow savings.
	if tot.ShadowSaved.String() != "0.012000" || tot.Spend.String() != "0.020000" || tot.UpstreamCalls != 5 || tot.Saved.Sign() != 0 {
		t.Fatalf("total = %+v", tot)
	}
}

func TestAnalyzeDaysFollowZone(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	// 03:00 UTC on 03-15 is 23:00 on 03-14 in New York.
	in := logLine("2025-03-14T23:00:00Z", "op", "x", "") + "\n" +
		logLine("2025-03-15T03:00:00Z", "op", "x", "") + "\n" +
		logLine("2025-03-15T05:00:00Z", "op", "x", "") + "\n"
	for _, c := range []struct {
		loc  *time.Location
		want map[string][2]int64 // day -> calls, repeats
	}{
		{time.UTC, map[string][2]int64{"2025-03-14": {1, 0}, "2025-03-15": {2, 1}}},
		{ny, map[string][2]int64{"2025-03-14": {2, 1}, "2025-03-15": {1, 0}}},
	} {
		reps, _ := analyze(t, in, AnalyzeOptions{Location: c.loc})
		got := map[string][2]int64{}
		for _, r := range reps {
			got[r.Day] = [2]int64{r.Total.Calls, r.Total.Repeats}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.loc, got, c.want)
		}
	}
}

func TestAnalyzeLines(t *testing.T) {
	ok := logLine("2025-03-14T10:00:00Z", "op", "a", "")
	cases := []struct {
		name, line string
		wantErr    string // "" = accepted
	}{
		{"minimal", ok, ""},
		{"unix seconds", `{"timestamp":1741946400.5,"request":{"model":"m","messages":[]}}`, ""},
		{"unix millis", `{"timestamp":1741946400500,"request":{"model":"m","messages":[]}}`, ""},
		{"space separator", `{"timestamp":"2025-03-14 10:00:00+01:00","request":{"model":"m","messages":[]}}`, ""},
		{"not json", `{"timestamp":`, "invalid JSON"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"trailing data", ok + ` x`, "data after the object"},
		{"no timestamp", `{"request":{"model":"m","messages":[]}}`, `missing "timestamp"`},
		{"bad timestamp", `{"timestamp":"yesterday","request":{}}`, "not RFC 3339"},
		{"no request", `{"timestamp":"2025-03-14T10:00:00Z"}`, `missing "request"`},
		{"request not json", `{"timestamp":"2025-03-14T10:00:00Z","request":{"model":"m",}}`, "request: request body is not valid JSON"},
		{"request duplicate key", `{"timestamp":"2025-03-14T10:00:00Z","request":{"model":"m","model":"n"}}`, "duplicate key"},
		{"operation not string", `{"timestamp":"2025-03-14T10:00:00Z","operation":3,"request":{}}`, `"operation" must be a string`},
		{"negative cost", ok[:len(ok)-1] + `,"cost_usd":-1}`, `"cost_usd" must be`},
		{"string cost", ok[:len(ok)-1] + `,"cost_usd":"0.1"}`, ""},
		{"string cost not a number", ok[:len(ok)-1] + `,"cost_usd":"ten cents"}`, `"cost_usd" must be`},
		{"string cost negative", ok[:len(ok)-1] + `,"cost_usd":"-0.1"}`, `"cost_usd" must be`},
		{"string cost empty", ok[:len(ok)-1] + `,"cost_usd":""}`, `"cost_usd" must be`},
		{"cost not a number", ok[:len(ok)-1] + `,"cost_usd":true}`, `"cost_usd" must be`},
		{"bad usage", ok[:len(ok)-1] + `,"usage":[1]}`, `"usage" must be`},
		{"usage count as string", ok[:len(ok)-1] + `,"usage":{"prompt_tokens":"12"}}`, `"usage" must be`},
		{"usage fractional count", ok[:len(ok)-1] + `,"usage":{"prompt_tokens":1.5}}`, `"usage" must be`},
		{"usage negative count", ok[:len(ok)-1] + `,"usage":{"output_tokens":-1}}`, `"usage" must be`},
		{"usage bad details", ok[:len(ok)-1] + `,"usage":{"prompt_tokens_details":{"cached_tokens":true}}}`, `"usage" must be`},
		{"bad duration", ok[:len(ok)-1] + `,"duration_ms":"fast"}`, `"duration_ms"`},
		{"bad shape", ok[:len(ok)-1] + `,"shape":"completions"}`, `"shape" must be`},
		{"bad path", ok[:len(ok)-1] + `,"path":"/v1/models"}`, "not a provider route"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The bad line is line 3: the error must name it.
			in := ok + "\n\n" + c.line + "\n" + ok + "\n"
			_, _, err := Analyze(context.Background(), strings.NewReader(in), AnalyzeOptions{})
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "line 3: ") {
				t.Fatalf("err = %v, want line 3: …%s…", err, c.wantErr)
			}
			// --skip-bad counts it and goes on.
			reps, st, err := Analyze(context.Background(), strings.NewReader(in), AnalyzeOptions{SkipBad: true})
			if err != nil || st.Skipped != 1 || st.FirstSkipped == nil || st.FirstSkipped.Line != 3 || st.Lines != 4 || reps[0].Total.Calls != 2 {
				t.Fatalf("skip-bad: err %v stats %+v", err, st)
			}
		})
	}
}

func TestAnalyzeCosts(t *testing.T) {
	prices := pricing.Default()
	mini := prices["gpt-4o-mini"]
	claude := prices["claude-sonnet-4-5"]
	cases := []struct {
		name  string
		extra string
		model string
		want  groundhog.Money
	}{
		{"cost_usd exact", `,"cost_usd":0.004`, "gpt-4o-mini", 4 * groundhog.Dollar / 1000},
		{"cost_usd exponent", `,"cost_usd":4e-3`, "gpt-4o-mini", 4 * groundhog.Dollar / 1000},
		{"cost_usd wins over usage", `,"cost_usd":1,"usage":{"prompt_tokens":10}`, "gpt-4o-mini", groundhog.Dollar},
		{"openai chat usage", `,"usage":{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":400}}`, "gpt-4o-mini",
			mini.Cost(groundhog.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 10})},
		{"openai responses usage", `,"usage":{"input_tokens":1000,"output_tokens":10,"input_tokens_details":{"cached_tokens":400}}`, "gpt-4o-mini",
			mini.Cost(groundhog.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 10})},
		{"anthropic usage", `,"usage":{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":800,"cache_creation_input_tokens":50}`, "claude-sonnet-4-5",
			claude.Cost(groundhog.Usage{InputTokens: 950, CachedInputTokens: 800, CacheWriteTokens: 50, OutputTokens: 10})},
		{"groundhog usage", `,"usage":{"input_tokens":1000,"cached_input_tokens":400,"cache_write_tokens":0,"output_tokens":10}`, "gpt-4o-mini",
			mini.Cost(groundhog.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 10})},
		{"integral floats and nulls", `,"usage":{"prompt_tokens":1e3,"completion_tokens":10.0,"prompt_tokens_details":null,"total_tokens":1010}`, "gpt-4o-mini",
			mini.Cost(groundhog.Usage{InputTokens: 1000, OutputTokens: 10})},
		{"unknown model", `,"usage":{"prompt_tokens":1000}`, "acme-internal-7b", groundhog.CostUnknown},
		{"no usage no cost", ``, "gpt-4o-mini", groundhog.CostUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := fmt.Sprintf(`{"timestamp":"2025-03-14T10:00:00Z","request":{"model":%q,"messages":[]}%s}`, c.model, c.extra)
			// Twice: the second is a repeat, so its cost shows in repeat_cost.
			reps, _ := analyze(t, line+"\n"+strings.Replace(line, "10:00:00", "10:00:01", 1), AnalyzeOptions{Prices: prices})
			tot := reps[0].Total
			if c.want == groundhog.CostUnknown {
				if tot.UnknownCostCalls != 2 || tot.Spend.Sign() != 0 || tot.RepeatCost.Sign() != 0 {
					t.Fatalf("unknown cost: %+v", tot)
				}
				return
			}
			if tot.Spend != groundhog.TotalOf(2*c.want) || tot.RepeatCost != groundhog.TotalOf(c.want) || tot.UnknownCostCalls != 0 {
				t.Fatalf("spend %s repeat cost %s, want %d %d", tot.Spend, tot.RepeatCost, 2*c.want, c.want)
			}
		})
	}
}

func TestAnalyzeShapes(t *testing.T) {
	// The hash is the gateway's: same shape, tenant and canonical body.
	for _, c := range []struct {
		name, fields, req string
		shape             groundhog.Shape
	}{
		{"inferred chat", ``, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, groundhog.ShapeChat},
		{"inferred messages", ``, `{"model":"claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, groundhog.ShapeMessages},
		{"inferred messages by system", ``, `{"model":"x","system":"s","messages":[]}`, groundhog.ShapeMessages},
		{"inferred responses", ``, `{"model":"gpt-4.1","input":"hi"}`, groundhog.ShapeResponses},
		{"inferred embeddings", ``, `{"model":"text-embedding-3-small","input":"hi"}`, groundhog.ShapeEmbeddings},
		{"shape field", `"shape":"messages",`, `{"model":"gpt-4o","messages":[]}`, groundhog.ShapeMessages},
		{"path field", `"path":"https://api.openai.com/v1/responses?x=1",`, `{"model":"gpt-4o","messages":[]}`, groundhog.ShapeResponses},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := fmt.Sprintf(`{%s"timestamp":"2025-03-14T10:00:00Z","tenant":"acme","request":%s}`, c.fields, c.req)
			call, ok, err := newAnalyzer(AnalyzeOptions{}).newParser().line([]byte(line), 1)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			want, err := fingerprint.Compute(fingerprint.Params{Shape: c.shape, Tenant: "acme"}, []byte(c.req))
			if err != nil {
				t.Fatal(err)
			}
			if got := call.hash; got != want.Hash {
				t.Fatalf("hash %s, want the %s hash %s", got, c.shape, want.Hash)
			}
		})
	}
}

func TestAnalyzeReorderWindow(t *testing.T) {
	l := func(ts, content string) string { return logLine(ts, "op", content, `,"duration_ms":1`) }
	// Completion-ordered log: the call started at :00 was logged after
	// the one started at :30. Its order decides which is the repeat.
	in := l("2025-03-14T10:00:30Z", "x") + "\n" + l("2025-03-14T10:00:00Z", "x") + "\n" + l("2025-03-14T10:10:00Z", "y") + "\n"
	reps, _ := analyze(t, in, AnalyzeOptions{ReorderWindow: time.Minute})
	if reps[0].Total.Repeats != 1 || reps[0].Total.Calls != 3 {
		t.Fatalf("total = %+v", reps[0].Total)
	}
	// Beyond the window it is a bad line, named.
	in = l("2025-03-14T10:00:30Z", "x") + "\n" + l("2025-03-14T10:10:00Z", "y") + "\n" + l("2025-03-14T10:00:00Z", "x") + "\n"
	_, _, err := Analyze(context.Background(), strings.NewReader(in), AnalyzeOptions{ReorderWindow: time.Minute})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "reorder window") {
		t.Fatalf("err = %v", err)
	}
	// A negative window requires a sorted file.
	in = l("2025-03-14T10:00:01Z", "x") + "\n" + l("2025-03-14T10:00:00Z", "x") + "\n"
	if _, _, err := Analyze(context.Background(), strings.NewReader(in), AnalyzeOptions{ReorderWindow: -1}); err == nil {
		t.Fatal("unsorted file accepted with a negative window")
	}
}

func TestAnalyzeLongLineAndProgress(t *testing.T) {
	// A line longer than the 1 MB read buffer, and progress that adds up
	// to the file size.
	big := strings.Repeat("z", 3<<20)
	in := logLine("2025-03-14T10:00:00Z", "op", big, "") + "\n" + logLine("2025-03-14T10:00:01Z", "op", big, "")
	var total int64
	reps, st := analyze(t, in, AnalyzeOptions{Progress: func(n int64) { total += n }})
	if reps[0].Total.Repeats != 1 || st.Bytes != int64(len(in)) || total != int64(len(in)) {
		t.Fatalf("repeats %d bytes %d progress %d, want 1 %d %d", reps[0].Total.Repeats, st.Bytes, total, len(in), len(in))
	}
}

func TestAnalyzeErrorLineAcrossChunks(t *testing.T) {
	// Lines are parsed in parallel chunks of about 1 MB: a bad line far
	// into the file is still named by its own number.
	var b strings.Builder
	n := 0
	for b.Len() < 3*chunkSize {
		n++
		fmt.Fprintln(&b, logLine("2025-03-14T10:00:00Z", "op", fmt.Sprint(n), ""))
	}
	b.WriteString("{oops}\n")
	b.WriteString(logLine("2025-03-14T10:00:01Z", "op", "last", "") + "\n")
	_, st, err := Analyze(context.Background(), strings.NewReader(b.String()), AnalyzeOptions{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != int64(n+1) {
		t.Fatalf("err = %v, want line %d", err, n+1)
	}
	if st.Lines != int64(n+1) {
		t.Errorf("stats.Lines = %d, want %d", st.Lines, n+1)
	}
	reps, st, err := Analyze(context.Background(), strings.NewReader(b.String()), AnalyzeOptions{SkipBad: true})
	if err != nil || st.Calls != int64(n+1) || st.Lines != int64(n+2) || reps[0].Total.Calls != int64(n+1) {
		t.Fatalf("skip-bad: %v %+v", err, st)
	}
}

// failingReader returns data, then an error.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestAnalyzeReadErrorAndCancel(t *testing.T) {
	boom := errors.New("disk gone")
	in := logLine("2025-03-14T10:00:00Z", "op", "a", "") + "\n"
	if _, _, err := Analyze(context.Background(), &failingReader{in, boom}, AnalyzeOptions{}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Analyze(ctx, strings.NewReader(strings.Repeat(in, 30000)), AnalyzeOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// equivalenceCalls is the size of the analyze-versus-ledger-report
// workload; GROUNDHOG_LEDGER_CALLS=1000000 runs the full-size check (about
// 20 s of CPU: too slow for every CI run).
func equivalenceCalls(t testing.TB) int {
	if s := os.Getenv("GROUNDHOG_LEDGER_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() || raceEnabled {
		return 8_000
	}
	return 30_000
}

func TestAnalyzeMatchesLedgerReport(t *testing.T) {
	// The same workload, once as a request log through Analyze and once as
	// the ledger rows a gateway (cache off) would have stored, reported by
	// BuildReport from SQLite: every day's report is identical.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	o := ledgertest.Options{Calls: equivalenceCalls(t), Seed: 7}
	prices := pricing.Default()

	f, err := os.CreateTemp(t.TempDir(), "requests-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	size, err := ledgertest.WriteJSONL(f, o)
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	if err := ledgertest.LedgerRows(o, prices, 5000, func(rows []groundhog.LedgerEntry) error {
		return db.AppendLedger(context.Background(), rows)
	}); err != nil {
		t.Fatal(err)
	}

	for _, loc := range []*time.Location{time.UTC, ny} {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		reps, st, err := Analyze(context.Background(), f, AnalyzeOptions{Location: loc, Prices: prices})
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		t.Logf("%s: analyzed %d lines (%.1f MB) in %v: %.0f lines/s, %.1f MB/s", loc, st.Lines, float64(size)/1e6, el,
			float64(st.Lines)/el.Seconds(), float64(size)/1e6/el.Seconds())
		if st.Calls != int64(o.Calls) || st.Bytes != size {
			t.Fatalf("stats = %+v, want %d calls, %d bytes", st, o.Calls, size)
		}
		if len(reps) < 3 {
			t.Fatalf("%d days, want the workload's 3 or 4", len(reps))
		}
		var calls, repeats, concurrent, unknown int64
		for _, rep := range reps {
			d, err := ParseDay(rep.Day, loc, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			live, err := BuildReport(context.Background(), db, ReportParams{Day: d, Location: loc})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep, live) {
				var a, b bytes.Buffer
				rep.WriteCSV(&a)
				live.WriteCSV(&b)
				t.Fatalf("%s %s: analyze and ledger report differ\nanalyze:\n%s\nledger:\n%s", loc, rep.Day, a.String(), b.String())
			}
			calls += rep.Total.Calls
			repeats += rep.Total.Repeats
			concurrent += rep.Total.ConcurrentIdentical
			unknown += rep.Total.UnknownCostCalls
		}
		// The workload exercises every column that matters offline.
		if calls != int64(o.Calls) || repeats == 0 || concurrent == 0 || unknown == 0 {
			t.Fatalf("workload too tame: calls %d repeats %d concurrent %d unknown %d", calls, repeats, concurrent, unknown)
		}
	}
}
