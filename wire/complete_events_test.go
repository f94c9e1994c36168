package wire

import (
	"bytes"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

// sameMessagesMark reports whether the walk's reading of an event is
// json.Unmarshal's: the verdict, and when it is a success every member,
// absent and present (nil and not) told apart.
func sameMessagesMark(a messagesMark, aok bool, b messagesMark, bok bool) bool {
	if aok != bok {
		return false
	}
	return !aok || string(a.typ) == string(b.typ) && a.hasIndex == b.hasIndex && a.index == b.index &&
		(a.deltaStop == nil) == (b.deltaStop == nil) && bytes.Equal(a.deltaStop, b.deltaStop) &&
		(a.messageStop == nil) == (b.messageStop == nil) && bytes.Equal(a.messageStop, b.messageStop)
}

func sameResponsesMark(a responsesMark, aok bool, b responsesMark, bok bool) bool {
	if aok != bok {
		return false
	}
	return !aok || string(a.typ) == string(b.typ) && a.hasStatus == b.hasStatus && bytes.Equal(a.status, b.status)
}

// checkMarks holds both walks of data to json.Unmarshal's reading; it
// returns which walks were fast.
func checkMarks(t *testing.T, w *jsonwalk.Walker, data []byte) (mfast, rfast bool) {
	t.Helper()
	me, mok, mfast := readMessagesMarkFast(w, data)
	if wme, wok := messagesMarkByUnmarshal(data); mfast && !sameMessagesMark(me, mok, wme, wok) {
		t.Fatalf("messages event %q:\nwalk           %v %+v\njson.Unmarshal %v %+v", data, mok, me, wok, wme)
	}
	re, rok, rfast := readResponsesMarkFast(w, data)
	if wre, wok := responsesMarkByUnmarshal(data); rfast && !sameResponsesMark(re, rok, wre, wok) {
		t.Fatalf("responses event %q:\nwalk           %v %+v\njson.Unmarshal %v %+v", data, rok, re, wok, wre)
	}
	// IsTerminal's search for what a terminal type holds only ever skips
	// the events the three eventType tests refuse.
	for _, name := range []string{"", "response.completed", "response.output_text.delta"} {
		ev := groundhog.Event{Name: name, Data: data}
		want := eventType(ev, "response.completed") || eventType(ev, "response.incomplete") || eventType(ev, "response.failed")
		if got := IsTerminal(groundhog.ShapeResponses, ev); got != want {
			t.Fatalf("IsTerminal(responses, %q %q) = %v, eventType says %v", name, data, got, want)
		}
	}
	// An event's type (IsTerminal, StreamEndedWithError): the same
	// events, the same rule.
	typ, tok, tfast := readEventTypeFast(w, data)
	if wtyp, wok := eventTypeByUnmarshal(data); tfast && (tok != wok || tok && string(typ) != string(wtyp)) {
		t.Fatalf("event type of %q:\nwalk           %v %q\njson.Unmarshal %v %q", data, tok, typ, wok, wtyp)
	}
	return mfast, rfast
}

// TestStreamEventsMatchUnmarshal: for random Messages and Responses events
// — keys in other cases, escaped or beyond ASCII, repeated members, every
// type in every place, numbers that are not int64, strings with escapes
// and bytes beyond ASCII, text full of quotes and brackets, invalid JSON —
// the walk that reads an event for StreamComplete gives json.Unmarshal's
// verdict and members whenever it answers, and it answers for the usual
// events.
func TestStreamEventsMatchUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	ws := func() string { return pick("", "", " ", "\n\t") }
	value := func() string {
		return pick("null", "0", "1", "-3", "1.0", "1e2", "99999999999999999999", `"x"`, `""`, "true", "{}", "[]", `{"a":[1,{"b":"}"}]}`)
	}
	str := func() string {
		return pick(`"message_start"`, `"message_delta"`, `"content_block_start"`, `"content_block_stop"`, `"message_stop"`, `"ping"`, `"error"`,
			`"response.completed"`, `"response.incomplete"`, `"response.failed"`, `"response.output_text.delta"`, `"completed"`, `"incomplete"`,
			`"message\u005fstop"`, `"caf`+"\xc3\xa9"+`"`, `"bad `+"\xff"+`"`, `""`, "null", "1", "{}", "[]", "true")
	}
	inner := func(name ...string) string {
		var ms []string
		for k := rng.Intn(4); k > 0; k-- {
			switch rng.Intn(3) {
			case 0:
				ms = append(ms, `"`+pick(name...)+`":`+ws()+pick(str(), value()))
			case 1:
				ms = append(ms, `"text":"he said \"}]{[\""`)
			default:
				ms = append(ms, `"`+pick("usage", "content", "id")+`":`+value())
			}
		}
		return pick("{"+strings.Join(ms, ","+ws())+"}", "{"+strings.Join(ms, ",")+"}", "{"+strings.Join(ms, ",")+"}", "null", value())
	}
	event := func() string {
		var ms []string
		for k := rng.Intn(6); k > 0; k-- {
			switch rng.Intn(7) {
			case 0, 1:
				ms = append(ms, `"`+pick("type", "Type", "TYPE", "typ\\u0065", "týpe")+`":`+ws()+str())
			case 2:
				ms = append(ms, `"`+pick("index", "Index", "ind\\u0065x")+`":`+ws()+value())
			case 3:
				ms = append(ms, `"`+pick("delta", "Delta", "message", "MESSAGE", "mess\\u0061ge")+`":`+ws()+inner("stop_reason", "Stop_Reason", "stop\\u005freason", "stop_reaſon"))
			case 4:
				ms = append(ms, `"`+pick("response", "Response", "resp\\u006fnse")+`":`+ws()+inner("status", "Status", "st\\u0061tus"))
			case 5:
				ms = append(ms, `"`+pick("id", "model", "usage", "sequence_number")+`":`+value())
			default:
				ms = append(ms, `"`+pick("a", "b")+`":`+value()) // repeats of other keys
			}
		}
		s := ws() + "{" + ws() + strings.Join(ms, ws()+","+ws()) + ws() + "}" + ws()
		switch rng.Intn(20) {
		case 0:
			s = s[:rng.Intn(len(s)+1)] // truncated
		case 1:
			s = "[1]"
		case 2:
			s = ""
		}
		return s
	}
	var w jsonwalk.Walker
	mf, rf := 0, 0
	for range 50000 {
		m, r := checkMarks(t, &w, []byte(event()))
		if m {
			mf++
		}
		if r {
			rf++
		}
	}
	if mf < 15000 || rf < 15000 {
		t.Fatalf("only %d (messages) and %d (responses) events took the walk", mf, rf)
	}

	// Every event of the recorded streams in testdata takes the walk.
	files, _ := filepath.Glob("testdata/*.sse")
	for _, f := range files {
		for _, ev := range loadStream(t, f) {
			m, r := checkMarks(t, &w, ev.Data)
			if strings.HasPrefix(filepath.Base(f), "messages_") && !m || strings.HasPrefix(filepath.Base(f), "responses_") && !r {
				t.Errorf("%s: event %q did not take the walk", f, ev.Data)
			}
		}
	}
}

// Every event of every recorded real stream is read as json.Unmarshal reads
// it (a Messages or Responses event as either shape, a chat chunk as a
// chunk), nearly all by the walk, and StreamComplete's verdict on each
// stream is the one it gives reading every event with json.Unmarshal.
func TestStreamEventsMatchUnmarshalRealTraffic(t *testing.T) {
	its, err := realtraffic.Load(realtraffic.Folder(t))
	if err != nil {
		t.Fatal(err)
	}
	var w jsonwalk.Walker
	streams, events, walked, typeWalked := 0, 0, 0, 0
	chatStreams, chatEvents, chatWalked := 0, 0, 0
	for _, it := range its {
		if !it.Meta.Stream || it.Meta.Status != 200 {
			continue
		}
		evs, err := readAll(NewSSEReader(bytes.NewReader(it.Response)))
		if err != nil && len(evs) == 0 {
			continue
		}
		own := strings.TrimPrefix(it.Meta.Route, "/v1/")
		if own == "chat/completions" {
			chatStreams++
			for _, ev := range evs[:len(evs)-1] { // all but [DONE]
				chatEvents++
				got, gok := chatChunk(&w, ev.Data, nil)
				want, wok := chatChunkByUnmarshal(ev.Data, nil)
				if gok != wok || (wok && !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0)) {
					t.Errorf("%s: chunk %q: walk %v %+v, json.Unmarshal %v %+v", it.ID, ev.Data, gok, got, wok, want)
				}
				if _, _, fast := chatChunkFast(&w, ev.Data, nil); fast {
					chatWalked++
				}
			}
			if got, want := chatComplete(evs), withUnmarshal(func() bool { return chatComplete(evs) }); got != want {
				t.Errorf("%s: complete %v, by json.Unmarshal %v", it.ID, got, want)
			}
			continue
		}
		if own != "messages" && own != "responses" {
			continue
		}
		streams++
		for _, ev := range evs {
			events++
			if m, r := checkMarks(t, &w, ev.Data); own == "messages" && m || own == "responses" && r {
				walked++
			}
			if _, _, fast := readEventTypeFast(&w, ev.Data); fast {
				typeWalked++
			}
		}
		for _, shape := range []string{"messages", "responses"} {
			var got, want bool
			if shape == "messages" {
				got, want = messagesComplete(evs), messagesCompleteByUnmarshal(evs)
			} else {
				got, want = responsesComplete(evs), responsesCompleteByUnmarshal(evs)
			}
			if got != want {
				t.Errorf("%s read as %s: complete %v, by json.Unmarshal %v", it.ID, shape, got, want)
			}
		}
	}
	if streams < 50 || walked < events*99/100 || typeWalked < events*99/100 || chatStreams < 20 || chatWalked < chatEvents*99/100 {
		t.Fatalf("Messages and Responses: %d streams, %d events, %d read by the walk (their type: %d); chat: %d streams, %d chunks, %d read by the walk",
			streams, events, walked, typeWalked, chatStreams, chatEvents, chatWalked)
	}
	t.Logf("Messages and Responses: %d streams, %d events, %d read by the walk (their type: %d); chat: %d streams, %d chunks, %d read by the walk",
		streams, events, walked, typeWalked, chatStreams, chatEvents, chatWalked)
}

// messagesCompleteByUnmarshal and responsesCompleteByUnmarshal are
// messagesComplete and responsesComplete reading every event with
// json.Unmarshal.
func messagesCompleteByUnmarshal(evs []groundhog.Event) bool {
	return withUnmarshal(func() bool { return messagesComplete(evs) })
}

func responsesCompleteByUnmarshal(evs []groundhog.Event) bool {
	return withUnmarshal(func() bool { return responsesComplete(evs) })
}

// withUnmarshal runs f with every event read by json.Unmarshal.
func withUnmarshal(f func() bool) bool {
	eventWalk = false
	defer func() { eventWalk = true }()
	return f()
}

// FuzzStreamEvents: whenever the walk reads an event, it reads it as
// json.Unmarshal does.
func FuzzStreamEvents(f *testing.F) {
	for _, s := range []string{
		`{"type":"message_start","message":{"id":"msg_1","model":"claude","stop_reason":null,"usage":{"input_tokens":3}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[]}}`,
		`{"Type":"ping","TYPE":"x"}`, `{"index":-0,"delta":null,"message":{"Stop_Reason":1,"stop_reason":2}}`,
		`{"response":{"status":"compl\u0065ted"}}`, `{"index":1e2}`, ` {"type":null} `, `[DONE]`,
	} {
		f.Add([]byte(s))
	}
	var w jsonwalk.Walker
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMarks(t, &w, data)
	})
}
