package wire

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

var usageShapes = []string{"chat", "responses", "messages"}

// checkUsageMarks holds the walk's reading of data, for each shape, to
// json.Unmarshal's; it returns the shapes whose walk answered.
func checkUsageMarks(t *testing.T, w *jsonwalk.Walker, data []byte) map[string]bool {
	t.Helper()
	fast := map[string]bool{}
	for _, shape := range usageShapes {
		e, ok, f := readUsageMarkFast(w, shape, data)
		want, wok := usageMarkByUnmarshal(shape, data)
		if f && (ok != wok || ok && !sameUsageMark(e, want)) {
			t.Fatalf("%s event %q:\nwalk           %v %q\njson.Unmarshal %v %q", shape, data, ok, e, wok, want)
		}
		fast[shape] = f
	}
	return fast
}

func sameUsageMark(a, b usageMark) bool {
	same := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return same(a.typ, b.typ) && same(a.model, b.model) && same(a.usage, b.usage) && same(a.top, b.top)
}

// TestUsageMarksMatchUnmarshal: for random events of the three shapes —
// keys in other cases, escaped or beyond ASCII, repeated members, every
// type in every place, usage objects with white space, invalid JSON — the
// walk that reads an event for a stream's usage gives json.Unmarshal's
// verdict and members whenever it answers, and it answers for the usual
// events.
func TestUsageMarksMatchUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	ws := func() string { return pick("", "", " ", "\n\t") }
	value := func() string {
		return pick("null", "0", "7", `"x"`, `""`, "true", "{}", "[]", `{"input_tokens":3, "output_tokens": 5}`, `{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}`)
	}
	str := func() string {
		return pick(`"gpt-4o-mini"`, `"claude-sonnet-4-5"`, `"message_start"`, `"message_delta"`, `"response.completed"`, `"response.created"`,
			`"gpt\u002d4o"`, `"caf`+"\xc3\xa9"+`"`, `"bad `+"\xff"+`"`, `""`, "null", "1", "{}", "[]")
	}
	inner := func() string {
		var ms []string
		for k := rng.Intn(4); k > 0; k-- {
			switch rng.Intn(3) {
			case 0:
				ms = append(ms, `"`+pick("model", "Model", "mod\\u0065l", "MODEL")+`":`+ws()+str())
			case 1:
				ms = append(ms, `"`+pick("usage", "Usage", "us\\u0061ge")+`":`+ws()+value())
			default:
				ms = append(ms, `"`+pick("id", "content", "text")+`":`+pick(value(), `"he said \"}]{[\""`))
			}
		}
		return pick("{"+strings.Join(ms, ","+ws())+"}", "{"+strings.Join(ms, ",")+"}", "null", value())
	}
	event := func() string {
		var ms []string
		for k := rng.Intn(6); k > 0; k-- {
			switch rng.Intn(6) {
			case 0:
				ms = append(ms, `"`+pick("type", "Type", "typ\\u0065")+`":`+ws()+str())
			case 1:
				ms = append(ms, `"`+pick("model", "Model", "mödel")+`":`+ws()+str())
			case 2:
				ms = append(ms, `"`+pick("usage", "USAGE", "us\\u0061ge")+`":`+ws()+value())
			case 3:
				ms = append(ms, `"`+pick("message", "Message", "response", "Response", "resp\\u006fnse")+`":`+ws()+inner())
			default:
				ms = append(ms, `"`+pick("id", "choices", "a")+`":`+value())
			}
		}
		s := ws() + "{" + ws() + strings.Join(ms, ws()+","+ws()) + ws() + "}" + ws()
		switch rng.Intn(20) {
		case 0:
			s = s[:rng.Intn(len(s)+1)]
		case 1:
			s = "[DONE]"
		}
		return s
	}
	var w jsonwalk.Walker
	counts := map[string]int{}
	for range 50000 {
		for shape, f := range checkUsageMarks(t, &w, []byte(event())) {
			if f {
				counts[shape]++
			}
		}
	}
	for _, shape := range usageShapes {
		if counts[shape] < 15000 {
			t.Fatalf("only %d %s events took the walk", counts[shape], shape)
		}
	}
	files, _ := filepath.Glob("testdata/*.sse")
	for _, f := range files {
		shape := strings.SplitN(filepath.Base(f), "_", 2)[0]
		for _, ev := range loadStream(t, f) {
			if fast := checkUsageMarks(t, &w, ev.Data); !fast[shape] {
				t.Errorf("%s: event %q did not take the walk", f, ev.Data)
			}
		}
	}
}

// FuzzUsageMarks: whenever the walk reads an event for a stream's usage, it
// reads it as json.Unmarshal does.
func FuzzUsageMarks(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-1","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}`,
		`{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":3,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`,
		`{"type":"response.completed","response":{"model":"gpt-5","usage":{"input_tokens":3}}}`,
		`{"Model":"a","model":"b"}`, `{"usage":null,"message":null}`, `{"response":{"Usage":1,"usage":2}}`, `[DONE]`,
	} {
		f.Add([]byte(s))
	}
	var w jsonwalk.Walker
	f.Fuzz(func(t *testing.T, data []byte) {
		checkUsageMarks(t, &w, data)
	})
}

// The usage, model and parts of every recorded stream — testdata's and,
// when GROUNDHOG_TEST_REALTRAFFIC names it, every real one — are the ones
// read with json.Unmarshal: the ledger's cost rests on them.
func TestStreamUsageMatchesUnmarshal(t *testing.T) {
	type stream struct {
		id    string
		shape groundhog.Shape
		evs   []groundhog.Event
	}
	var streams []stream
	files, _ := filepath.Glob("testdata/*.sse")
	for _, f := range files {
		streams = append(streams, stream{f, shapeOf(t, f), loadStream(t, f)})
	}
	if dir := os.Getenv("GROUNDHOG_TEST_REALTRAFFIC"); dir != "" {
		its, err := realtraffic.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			shape := groundhog.Shape(strings.TrimSuffix(strings.TrimPrefix(it.Meta.Route, "/v1/"), "/completions"))
			if !it.Meta.Stream || (shape != groundhog.ShapeChat && shape != groundhog.ShapeResponses && shape != groundhog.ShapeMessages) {
				continue
			}
			evs, _ := readAll(NewSSEReader(bytes.NewReader(it.Response)))
			if len(evs) > 0 {
				streams = append(streams, stream{it.ID, shape, evs})
			}
		}
	} else if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal("GROUNDHOG_TEST_REALTRAFFIC is unset: set it to the folder of recorded provider traffic")
	}
	withUsage := 0
	for _, s := range streams {
		model, u, parts, err := UsagePartsFromEvents(s.shape, s.evs)
		var wm string
		var wu groundhog.Usage
		var wp []groundhog.UsagePart
		var werr error
		withUnmarshal(func() bool { wm, wu, wp, werr = UsagePartsFromEvents(s.shape, s.evs); return true })
		if model != wm || u != wu || !reflect.DeepEqual(parts, wp) || (err == nil) != (werr == nil) {
			t.Errorf("%s: %q %+v %v %v\nby json.Unmarshal: %q %+v %v %v", s.id, model, u, parts, err, wm, wu, wp, werr)
		}
		if u != (groundhog.Usage{}) {
			withUsage++
		}
	}
	if withUsage < len(files) {
		t.Fatalf("%d of %d streams have a usage", withUsage, len(streams))
	}
	t.Logf("%d streams, %d with a usage", len(streams), withUsage)
}
