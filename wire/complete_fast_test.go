package wire

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// TestChatChunkMatchesUnmarshal: for random chunks — the sim's and real
// providers' forms, keys in other cases or escaped or non-ASCII, repeated
// members, every type in every place, numbers that are not int64, nested
// text full of quotes and brackets, invalid JSON, "[DONE]" — chatChunk gives
// json.Unmarshal's verdict and choices.
func TestChatChunkMatchesUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	ws := func() string { return pick("", "", " ", "\n\t") }
	choice := func() string {
		var ms []string
		for k := rng.Intn(4); k > 0; k-- {
			switch rng.Intn(4) {
			case 0:
				ms = append(ms, `"`+pick("index", "Index", "INDEX", "ind\\u0065x", "índex")+`":`+ws()+pick("0", "1", "2", "-1", "1.0", "1e2", "99999999999999999999", `"1"`, "null", "true", "{}", "[]"))
			case 1:
				ms = append(ms, `"`+pick("finish_reason", "Finish_Reason", "finish_reasoN", "finish\\u005freason")+`":`+ws()+pick("null", `"stop"`, `""`, "1", "{}", "[]", "false"))
			case 2:
				ms = append(ms, `"delta":{"content":"`+pick(`he said \"}]{[\"`, `tab\t`, `é`, ``)+`","role":"assistant"}`)
			default:
				ms = append(ms, `"logprobs":null`)
			}
		}
		return pick("{"+strings.Join(ms, ","+ws())+"}", "{"+strings.Join(ms, ",")+"}", "{"+strings.Join(ms, ",")+"}", "null", "1", `"x"`, "[]", "true")
	}
	chunk := func() string {
		var ms []string
		for k := rng.Intn(5); k > 0; k-- {
			switch rng.Intn(5) {
			case 0:
				ms = append(ms, `"`+pick("error", "Error", "ERROR", "err\\u006fr", "érror")+`":`+pick("null", "{}", `{"message":"x"}`, `"x"`, "0"))
			case 1, 2:
				var cs []string
				for n := rng.Intn(4); n > 0; n-- {
					cs = append(cs, choice())
				}
				ms = append(ms, `"`+pick("choices", "Choices", "CHOICES", "cho\\u0069ces")+`":`+ws()+pick("["+strings.Join(cs, ","+ws())+"]", "["+strings.Join(cs, ",")+"]", "null", "{}", `"x"`, "[]"))
			case 3:
				ms = append(ms, `"id":"chatcmpl-1"`, `"object":"chat.completion.chunk"`, `"created":1700000000`)
			default:
				ms = append(ms, `"model":"sim-small"`, `"usage":{"prompt_tokens":3}`)
			}
		}
		s := ws() + "{" + ws() + strings.Join(ms, ws()+","+ws()) + ws() + "}" + ws()
		switch rng.Intn(20) {
		case 0:
			s = s[:rng.Intn(len(s)+1)] // truncated
		case 1:
			s = "[DONE]"
		case 2:
			s = "[1]"
		}
		return s
	}
	fast := 0
	for range 50000 {
		data := []byte(chunk())
		want, wok := chatChunkByUnmarshal(data, nil)
		got, gok := chatChunk(nil, data, nil)
		if wok != gok || (wok && !reflect.DeepEqual(want, got) && !(len(want) == 0 && len(got) == 0)) {
			t.Fatalf("%s:\njson.Unmarshal %v %+v\nchatChunk      %v %+v", data, wok, want, gok, got)
		}
		if _, _, f := chatChunkFast(nil, data, nil); f {
			fast++
		}
	}
	if fast < 20000 {
		t.Fatalf("only %d chunks took the fast walk", fast)
	}
	sim := []byte(`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`)
	if _, _, f := chatChunkFast(nil, sim, nil); !f {
		t.Fatal("the sim's chunk did not take the fast walk")
	}
}

// FuzzChatChunk: chatChunk gives json.Unmarshal's verdict and choices for
// any chunk.
func FuzzChatChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"finish_reason":"stop"}],"Choices":null}`, `{"error":{"message":"x"}}`, `{"choices":[{"Index":1.5}]}`,
		`{"cho\u0069ces":[null]}`, `[DONE]`, ` {"choices":[]} `, `{"error":null,"choices":[{"index":99999999999999999999}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wok := chatChunkByUnmarshal(data, nil)
		got, gok := chatChunk(nil, data, nil)
		if wok != gok || (wok && !reflect.DeepEqual(want, got) && !(len(want) == 0 && len(got) == 0)) {
			t.Fatalf("%q:\njson.Unmarshal %v %+v\nchatChunk      %v %+v", data, wok, want, gok, got)
		}
	})
}
