package promptcache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/realtraffic"
	"github.com/groundhog-ai/groundhog/wire"
)

// byUnmarshal is ReadReply by json.Unmarshal alone: the reading the walk
// must equal.
func byUnmarshal(shape groundhog.Shape, body []byte, events []groundhog.Event) Reply {
	replyWalk = false
	defer func() { replyWalk = true }()
	return ReadReply(shape, body, events)
}

// replyGen makes answers as a provider might write them and as it should
// not: keys in other letter cases, escaped or beyond ASCII, members twice,
// every type in every place, white space, truncated text.
type replyGen struct{ r *rand.Rand }

func (g replyGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g replyGen) str() string {
	return g.pick(`"msg_01XFDUDYJgAACzvnptvVoYEL"`, `"resp_68af"`, `""`, `"system_changed"`, `"cache_miss"`, `"cache_hit"`,
		`"tools_changed"`, `"caf\u00e9"`, `"café"`, `"a\"b"`, `"x\\y"`, `"\ud83d\ude00"`)
}

func (g replyGen) scalar() string {
	return g.pick(g.str(), g.str(), "null", "true", "12", "-0.5", "1e3", "[]", `[1,"a"]`, "{}")
}

func (g replyGen) key(names ...string) string {
	k := g.pick(names...)
	switch g.r.IntN(12) {
	case 0:
		k = strings.ToUpper(k)
	case 1:
		k = strings.ToUpper(k[:1]) + k[1:]
	case 2:
		k = strings.Replace(k, k[:1], fmt.Sprintf(`\u%04x`, k[0]), 1) // escaped, same name
	case 3:
		k = "other"
	case 4:
		k = k + "ſ" // beyond ASCII
	}
	return `"` + k + `"`
}

// object writes an object of 0–4 members whose keys come from names and
// whose values come from val (or any scalar).
func (g replyGen) object(names []string, val func(name string) string) string {
	var b strings.Builder
	b.WriteString(g.pick("{", "{ ", "{\n"))
	n := g.r.IntN(5)
	for i := range n {
		if i > 0 {
			b.WriteString(g.pick(",", ", ", ",\n"))
		}
		k := g.key(names...)
		b.WriteString(k + g.pick(":", " : "))
		name := strings.ToLower(strings.Trim(k, `"`))
		if g.r.IntN(6) == 0 {
			b.WriteString(g.scalar())
		} else {
			b.WriteString(val(name))
		}
	}
	b.WriteString(g.pick("}", " }"))
	return b.String()
}

func (g replyGen) answer(shape groundhog.Shape) string {
	if shape == groundhog.ShapeResponses {
		return g.object([]string{"id", "prompt_cache_diagnostics", "output", "status"}, func(name string) string {
			if name == "prompt_cache_diagnostics" {
				return g.object([]string{"type", "reason", "cache_missed_tokens"}, func(string) string { return g.str() })
			}
			return g.str()
		})
	}
	return g.object([]string{"id", "diagnostics", "content", "usage"}, func(name string) string {
		if name == "diagnostics" {
			return g.object([]string{"cache_miss_reason", "previous_message_id"}, func(name string) string {
				if name == "cache_miss_reason" {
					return g.pick("null", g.object([]string{"type", "cache_missed_input_tokens"}, func(string) string { return g.str() }))
				}
				return g.str()
			})
		}
		return g.str()
	})
}

// reply is a random answer of shape: a body, or a stream holding it.
func (g replyGen) reply(shape groundhog.Shape) ([]byte, []groundhog.Event) {
	cut := func(s string) string {
		if g.r.IntN(15) == 0 && len(s) > 0 {
			return s[:g.r.IntN(len(s))]
		}
		return s
	}
	if g.r.IntN(2) == 0 {
		return []byte(cut(g.answer(shape))), nil
	}
	name, holder := "message_start", "message"
	if shape == groundhog.ShapeResponses {
		name, holder = "response.completed", "response"
	}
	var evs []groundhog.Event
	for range 1 + g.r.IntN(3) {
		data := g.object([]string{"type", holder}, func(n string) string {
			if n == holder {
				return g.answer(shape)
			}
			return `"` + name + `"`
		})
		evName := name
		if g.r.IntN(4) == 0 {
			evName = "ping"
		}
		evs = append(evs, groundhog.Event{Name: evName, Data: []byte(cut(data))})
	}
	return nil, evs
}

// The walk's reading of an answer is json.Unmarshal's, on 100,000 random
// answers; and it answers for most of them (the usual ones).
func TestReplyByWalkMatchesUnmarshal(t *testing.T) {
	g := replyGen{rand.New(rand.NewPCG(7, 11))}
	walked := 0
	const n = 100_000
	for i := range n {
		shape := []groundhog.Shape{groundhog.ShapeMessages, groundhog.ShapeResponses}[i%2]
		body, evs := g.reply(shape)
		got, want := ReadReply(shape, body, evs), byUnmarshal(shape, body, evs)
		if got != want {
			t.Fatalf("%s: walk %+v, json.Unmarshal %+v\nbody %s\nevents %s", shape, got, want, body, evs)
		}
		var w jsonwalk.Walker
		if _, ok := replyByWalk(&w, shape, body, evs); ok {
			walked++
		}
	}
	if walked < n/4 {
		t.Errorf("the walk answered %d of %d answers: too few to hold it to json.Unmarshal", walked, n)
	}
	t.Logf("the walk answered %d of %d random answers", walked, n)
}

// Every recorded Anthropic Messages and OpenAI Responses answer, body or
// stream, is read by the walk, as json.Unmarshal reads it.
func TestReplyByWalkRealTraffic(t *testing.T) {
	its, err := realtraffic.Load(realtraffic.Folder(t))
	if err != nil {
		t.Fatal(err)
	}
	read, withID := map[groundhog.Shape]int{}, 0
	for _, it := range its {
		var shape groundhog.Shape
		switch it.Meta.Route {
		case "/v1/messages":
			shape = groundhog.ShapeMessages
		case "/v1/responses":
			shape = groundhog.ShapeResponses
		default:
			continue
		}
		if it.Meta.Status != 200 {
			continue
		}
		body, evs := it.Response, []groundhog.Event(nil)
		if it.Meta.Stream {
			r := wire.NewSSEReader(bytes.NewReader(it.Response))
			for {
				ev, err := r.Next()
				if err != nil {
					break
				}
				evs = append(evs, ev)
			}
			body = nil
		}
		var w jsonwalk.Walker
		got, ok := replyByWalk(&w, shape, body, evs)
		if !ok {
			t.Errorf("%s: the walk did not read the answer", it.ID)
			continue
		}
		if want := byUnmarshal(shape, body, evs); got != want {
			t.Errorf("%s: walk %+v, json.Unmarshal %+v", it.ID, got, want)
		}
		read[shape]++
		if got.ID != "" {
			withID++
		}
	}
	if read[groundhog.ShapeMessages] == 0 || read[groundhog.ShapeResponses] == 0 {
		t.Fatalf("answers read: %v; want recorded Messages and Responses answers", read)
	}
	if total := read[groundhog.ShapeMessages] + read[groundhog.ShapeResponses]; withID < total*9/10 {
		t.Errorf("%d of %d answers with an id read: the walk misses ids", withID, total)
	}
	t.Logf("recorded answers read by the walk: %v, %d with an id", read, withID)
}

// FuzzReadReply: whenever the walk reads an answer, it reads it as
// json.Unmarshal does, as a body and as the answer of a stream's event.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{
		`{"id":"msg_1","diagnostics":{"cache_miss_reason":{"type":"system_changed","cache_missed_input_tokens":812}}}`,
		`{"id":"msg_2","diagnostics":{"cache_miss_reason":null}}`,
		`{"type":"message_start","message":{"id":"msg_4","diagnostics":{}}}`,
		`{"id":"resp_1","prompt_cache_diagnostics":{"type":"cache_miss","reason":"tools_changed"}}`,
		`{"type":"response.completed","response":{"id":"resp_3","prompt_cache_diagnostics":{"type":"cache_hit"}}}`,
		`{"ID":"x","Diagnostics":{"Cache_Miss_Reason":{"TYPE":"a"}}}`,
		`{"id":"a","id":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, shape := range []groundhog.Shape{groundhog.ShapeMessages, groundhog.ShapeResponses} {
			name := "message_start"
			if shape == groundhog.ShapeResponses {
				name = "response.completed"
			}
			evs := []groundhog.Event{{Name: name, Data: data}}
			for _, c := range []struct {
				body []byte
				evs  []groundhog.Event
			}{{data, nil}, {nil, evs}} {
				if got, want := ReadReply(shape, c.body, c.evs), byUnmarshal(shape, c.body, c.evs); got != want {
					t.Fatalf("%s: walk %+v, json.Unmarshal %+v", shape, got, want)
				}
			}
		}
	})
}

// BenchmarkReadReply reads the answer of a streamed Messages call (its
// message_start event) and of a streamed Responses call with 4 KB of output
// (its response.completed event), by the walk and by json.Unmarshal alone.
func BenchmarkReadReply(b *testing.B) {
	start := `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":18012,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}`
	text := strings.Repeat("The quarterly report shows revenue grew 12% year over year. ", 70)
	completed := `{"type":"response.completed","sequence_number":90,"response":{"id":"resp_68af","object":"response","created_at":1756000000,"status":"completed","model":"gpt-5.4-2026-03-05","output":[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}],"role":"assistant"}],"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":900,"total_tokens":2100}}}`
	for _, c := range []struct {
		name  string
		shape groundhog.Shape
		ev    groundhog.Event
	}{
		{"messages", groundhog.ShapeMessages, groundhog.Event{Name: "message_start", Data: []byte(start)}},
		{"responses4KB", groundhog.ShapeResponses, groundhog.Event{Name: "response.completed", Data: []byte(completed)}},
	} {
		evs := []groundhog.Event{c.ev, {Name: "ping", Data: []byte(`{"type":"ping"}`)}}
		for _, walk := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/walk=%v", c.name, walk), func(b *testing.B) {
				replyWalk = walk
				defer func() { replyWalk = true }()
				if r := ReadReply(c.shape, nil, evs); r.ID == "" {
					b.Fatal("no id")
				}
				b.ReportAllocs()
				for b.Loop() {
					ReadReply(c.shape, nil, evs)
				}
			})
		}
	}
}
