package ledger

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// fastTimestamp is dayCache.fastTimestamp with nothing remembered (the
// tests, and the old path kept verbatim in analyze_old_test.go).
func fastTimestamp(v []byte) (ns int64, ok bool) {
	var dc dayCache
	return dc.fastTimestamp(v)
}

// checkFastTimestamp: when the fast path reads v, the general one reads
// the same instant.
func checkFastTimestamp(t *testing.T, v []byte) bool {
	t.Helper()
	ns, ok := fastTimestamp(v)
	if !ok {
		return false
	}
	want, err := parseTimestamp(v)
	if err != nil {
		t.Fatalf("fastTimestamp(%s) = %d, but parseTimestamp rejects it: %v", v, ns, err)
	}
	if ns != want.UnixNano() {
		t.Fatalf("fastTimestamp(%s) = %d, parseTimestamp %d", v, ns, want.UnixNano())
	}
	return true
}

func TestFastTimestamp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lo := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 200000 {
		tm := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC()
		var s string
		switch r.IntN(4) {
		case 0:
			s = tm.Format(time.RFC3339Nano) // 0–9 decimals, trailing zeros cut
		case 1:
			s = tm.Format(time.RFC3339)
		case 2:
			s = tm.Format("2006-01-02T15:04:05.000Z")
		default:
			s = tm.Format("2006-01-02T15:04:05.000000000Z")
		}
		v := []byte(strconv.Quote(s))
		if !checkFastTimestamp(t, v) {
			t.Fatalf("fastTimestamp(%s) fell back", v)
		}
	}
	// Not the fast form, or not valid: the general code decides.
	for _, s := range []string{
		`"2025-03-14T09:26:53.589+01:00"`, `"2025-03-14 09:26:53Z"`, `"2025-02-29T00:00:00Z"`,
		`"2024-02-30T00:00:00Z"`, `"2025-13-01T00:00:00Z"`, `"2025-00-01T00:00:00Z"`,
		`"2025-01-00T00:00:00Z"`, `"2025-01-01T24:00:00Z"`, `"2025-01-01T00:60:00Z"`,
		`"2025-01-01T00:00:60Z"`, `"2025-01-01T00:00:00.Z"`, `"2025-01-01T00:00:00.1234567890Z"`,
		`"1969-12-31T23:59:59Z"`, `"2200-01-01T00:00:00Z"`, `"2025-01-01t00:00:00Z"`,
		`"2025-01-01T00:00:00z"`, `"+025-01-01T00:00:00Z"`, `"2025-1-01T00:00:00Z"`,
		`"2025-01-01T00:00:00,5Z"`, `1741944413`, `"2025-01-01T00:00:0xZ"`,
	} {
		checkFastTimestamp(t, []byte(s))
	}
	if _, ok := fastTimestamp([]byte(`"2025-02-29T00:00:00Z"`)); ok {
		t.Error("2025-02-29 accepted")
	}
	if !checkFastTimestamp(t, []byte(`"2024-02-29T23:59:59.999999999Z"`)) {
		t.Error("leap day fell back")
	}
}

func FuzzFastTimestamp(f *testing.F) {
	f.Add([]byte(`"2025-03-14T09:26:53.589746429Z"`))
	f.Add([]byte(`"2000-02-29T00:00:00Z"`))
	f.Fuzz(func(t *testing.T, v []byte) { checkFastTimestamp(t, v) })
}

func TestFastShape(t *testing.T) {
	for name := range shapeAliases {
		v := []byte(strconv.Quote(name))
		sh, ok := fastShape(v)
		want, known := ParseShape(name)
		if !ok || !known || sh != want {
			t.Errorf("fastShape(%s) = %q %v, ParseShape %q %v", v, sh, ok, want, known)
		}
	}
	for _, v := range []string{`"Chat"`, `" chat"`, `"/v1/messages"`, `"ch\u0061t"`, `"nope"`, `5`} {
		if sh, ok := fastShape([]byte(v)); ok {
			t.Errorf("fastShape(%s) = %q: must leave it to ParseShape", v, sh)
		}
	}
}

func TestFastPath(t *testing.T) {
	for _, c := range []struct {
		v    string
		want string
		ok   bool
	}{
		{`"/v1/chat/completions"`, "chat", true},
		{`"/v1/responses?x=1"`, "responses", true},
		{`"https://api.anthropic.com/v1/messages/"`, "messages", true},
		{`"/v1/embeddings#a"`, "embeddings", true},
		{`"/v1/models"`, "", false},
		{`"/v1\/messages"`, "", false}, // escapes: the general code decodes it
		{`5`, "", false},
	} {
		sh, ok := fastPath([]byte(c.v))
		if string(sh) != c.want || ok != c.ok {
			t.Errorf("fastPath(%s) = %q %v, want %q %v", c.v, sh, ok, c.want, c.ok)
		}
		if ok {
			p, _ := plainString([]byte(c.v))
			if want, _ := shapeForPath(p); want != sh {
				t.Errorf("fastPath(%s) = %q, shapeForPath %q", c.v, sh, want)
			}
		}
	}
}

func TestInferShapeModel(t *testing.T) {
	for _, c := range []struct{ req, want string }{
		{`{"model":"claude-haiku-4-5","messages":[]}`, "messages"},
		{`{"model":"clau\u0064e-x","messages":[]}`, "messages"},
		{`{"model":"gpt-4o","messages":[]}`, "chat"},
		{`{"model":"text-embedding-3-small","input":"x"}`, "embeddings"},
		{`{"model":"text-emb\u0065dding","input":"x"}`, "embeddings"},
		{`{"model":"gpt-4o","input":"x"}`, "responses"},
		{`{"model":"claude-x","model":null,"messages":[]}`, "messages"}, // null leaves the model, as json.Unmarshal does
		{`{"model":5,"messages":[]}`, "chat"},
	} {
		if got := inferShape([]byte(c.req)); string(got) != c.want {
			t.Errorf("inferShape(%s) = %s, want %s", c.req, got, c.want)
		}
	}
}

func TestPlainDigitsAsStrconv(t *testing.T) {
	// jsonInt and jsonFloat take plainDigits' answer instead of strconv's:
	// it must be strconv's whenever it answers.
	for _, s := range []string{"0", "7", "007", "12", "123456789012345678", "999999999999999999",
		"1234567890123456789", "99999999999999999999", "9007199254740993", "-1", "+1", "1.0", "1e3", "", " 1", "1 ", "0x10", "1_0"} {
		if n, ok := plainDigits([]byte(s)); ok {
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n != want {
				t.Errorf("plainDigits(%q) = %d, ParseInt %d, %v", s, n, want, err)
			}
		}
		gi, giok := jsonInt([]byte(s))
		gf, gfok := jsonFloat([]byte(s))
		wf, werr := strconv.ParseFloat(s, 64)
		if gfok && (werr != nil || gf != wf) {
			t.Errorf("jsonFloat(%q) = %v, ParseFloat %v, %v", s, gf, wf, werr)
		}
		if wi, err := strconv.ParseInt(s, 10, 64); err == nil && (!giok || gi != wi) {
			t.Errorf("jsonInt(%q) = %d %v, ParseInt %d", s, gi, giok, wi)
		}
	}
}

func FuzzPlainDigits(f *testing.F) {
	f.Add("123")
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := plainDigits([]byte(s)); ok {
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n != want {
				t.Fatalf("plainDigits(%q) = %d, ParseInt %d, %v", s, n, want, err)
			}
			if f, _ := strconv.ParseFloat(s, 64); n <= 1<<53 && float64(n) != f {
				t.Fatalf("float64(%d) != ParseFloat(%q) = %v", n, s, f)
			}
		}
	})
}

// A dayCache reading a run of timestamps gives, for each, what a fresh
// fastTimestamp gives: dates repeated and changing, valid and not (an
// invalid date never remembered, an invalid time after a remembered date).
func TestDayCacheAsFresh(t *testing.T) {
	dates := []string{"2025-03-14", "2025-03-15", "2024-02-29", "2025-02-29", "1969-12-31", "2199-12-31",
		"2025-13-01", "2025-1x-01", "2025-03-1"}
	times := []string{"00:00:00", "23:59:59", "12:34:56.789", "24:00:00", "00:60:00", "00:00:00.1234567890",
		"00:00:00.", "0x:00:00", "09:26:53.589874644"}
	r := rand.New(rand.NewPCG(5, 6))
	var dc dayCache
	for range 100_000 {
		d, tm := dates[r.IntN(len(dates))], times[r.IntN(len(times))]
		if r.IntN(3) > 0 {
			d = dates[r.IntN(2)] // runs of the same day, as in a log
		}
		v := []byte(`"` + d + "T" + tm + `Z"`)
		if r.IntN(50) == 0 {
			v = []byte(`"` + d + " " + tm + `Z"`)
		}
		got, gok := dc.fastTimestamp(v)
		want, wok := fastTimestampFresh(v)
		if got != want || gok != wok {
			t.Fatalf("%s: cached %d %v, fresh %d %v", v, got, gok, want, wok)
		}
	}
}

// fastTimestampFresh is fastTimestamp with nothing remembered.
func fastTimestampFresh(v []byte) (int64, bool) {
	var dc dayCache
	return dc.fastTimestamp(v)
}
