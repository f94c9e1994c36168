package bedrock

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

const testModelID = "anthropic.claude-sonnet-4-5-20250929-v1:0"

// checkFast holds a fast path to the encoding/json path it stands in for:
// a body it takes is one the encoding/json path accepts, and the two hash
// the same (the fingerprint reads both, or refuses both); a body that is
// not JSON it never takes.
func checkFast(t *testing.T, shape groundhog.Shape, fast func(string, []byte) ([]byte, bool), decode func(string, []byte) ([]byte, error), body []byte) (taken bool) {
	t.Helper()
	out, ok := fast(testModelID, body)
	if !ok {
		return false
	}
	if !json.Valid(body) {
		t.Fatalf("took %q, which is not JSON", body)
	}
	slow, err := decode(testModelID, body)
	if err != nil {
		t.Fatalf("took %q, which the encoding/json path refuses: %v", body, err)
	}
	p := fingerprint.Params{Shape: shape, Tenant: "t"}
	rf, ferr := fingerprint.Compute(p, out)
	rs, serr := fingerprint.Compute(p, slow)
	if (ferr == nil) != (serr == nil) || ferr == nil && rf != rs {
		t.Fatalf("%q:\n spliced %s\n %+v %v\n decoded %s\n %+v %v", body, out, rf, ferr, slow, rs, serr)
	}
	if ferr == nil && rf.Model != testModelID {
		t.Fatalf("%q: the spliced body's model is %q", body, rf.Model)
	}
	return true
}

func checkConverse(t *testing.T, body []byte) bool {
	t.Helper()
	return checkFast(t, groundhog.ShapeConverse, spliceConverse, decodeFingerprintBody, body)
}

func checkInvoke(t *testing.T, body []byte) bool {
	t.Helper()
	return checkFast(t, groundhog.ShapeMessages, spliceInvoke, decodeInvokeFingerprintBody, body)
}

// usualConverse are Converse bodies as the SDKs send them.
var usualConverse = []string{
	`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`,
	`{"system":[{"text":"be brief"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"a <b> & \"c\" \u00e9\n"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"text":"ok"}]}],"inferenceConfig":{"maxTokens":512,"temperature":0.2,"topP":0.9,"stopSequences":["\n\nHuman:"]}}`,
	`{"messages":[{"role":"user","content":[{"cachePoint":{"type":"default"}},{"text":"x"},{"cachePoint":{"type":"default"}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","inputSchema":{"json":{"type":"object","properties":{"path":{"type":"string"}}}}}},{"cachePoint":{"type":"default"}}],"toolChoice":{"auto":{}}}}`,
	"{\n  \"messages\": [ {\"role\": \"user\", \"content\": [ {\"image\": {\"format\": \"png\", \"source\": {\"bytes\": \"iVBORw0KGgo=\"}}}, {\"text\": \"what is it?\"} ] } ],\n  \"additionalModelResponseFieldPaths\": [\"/stop_sequence\"],\n  \"requestMetadata\": {\"team\": \"x\"}\n}\n",
	`{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"json":{"n":-1.5e-3,"ok":true,"v":null}}]}}]}],"system":[{"cachePoint":{"type":"default"}}],"inferenceConfig":null,"toolConfig":{"tools":[{"cachePoint":{"type":"default"}}]}}`,
	`{"messages":null,"system":null}`,
	`{}`,
}

// usualInvoke are native Anthropic InvokeModel bodies.
var usualInvoke = []string{
	`{"anthropic_version":"bedrock-2023-05-31","max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`,
	`{"anthropic_version":"bedrock-2023-05-31","max_tokens":1024,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["x"],"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a <b> \u00e9"}]},{"role":"assistant","content":"ok"}],"tools":[{"name":"read_file","input_schema":{"type":"object"}}],"stream":true}`,
	`{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":null}],"tools":null}`,
}

func TestFastPathsTakeTheUsualBodies(t *testing.T) {
	text := strings.Repeat(`The report says:\n revenue grew \"5%\" and costs fell.\n `, 4000)
	for _, b := range append(usualConverse, `{"messages":[{"role":"user","content":[{"text":"`+text+`"},{"cachePoint":{"type":"default"}}]}]}`) {
		if !checkConverse(t, []byte(b)) {
			t.Errorf("spliceConverse left %.200s to the encoding/json path", b)
		}
	}
	for _, b := range append(usualInvoke, `{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"`+text+`"}]}`) {
		if !checkInvoke(t, []byte(b)) {
			t.Errorf("spliceInvoke left %.200s to the encoding/json path", b)
		}
	}
	// The cachePoint blocks are cut from the spliced body itself.
	out, _ := spliceConverse(testModelID, []byte(usualConverse[2]))
	if bytes.Contains(out, []byte("cachePoint")) {
		t.Errorf("cachePoint blocks left in %s", out)
	}
}

func TestFastPathsLeaveTheRest(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat(`}`, 600)
	for _, b := range []string{
		``, `[]`, `null`, `"x"`, `{"messages":[]`, `{"messages":[]} x`, `{"messages":[],}`, `{"x":` + deep + `}`,
		`{"model":"other"}`, `{"Model":"other"}`, `{"Messages":[]}`, `{"mess\u0061ges":[]}`, `{"messages":[],"messages":[]}`, `{"meſsages":[]}`,
		`{"messages":"x"}`, `{"messages":[1]}`, `{"messages":[{"role":1}]}`, `{"messages":[{"content":"x"}]}`, `{"messages":[{"content":[1]}]}`,
		`{"messages":[{"content":[{"text":1}]}]}`, `{"messages":[{"Role":"user"}]}`, `{"messages":[{"role":"a","role":"b"}]}`,
		`{"messages":[{"content":[{"Text":"x"}]}]}`, `{"messages":[{"content":[{"cache\u0050oint":{}}]}]}`,
		`{"system":"x"}`, `{"system":[{"text":"a","text":"b"}]}`, `{"inferenceConfig":{"maxTokens":1.5}}`, `{"inferenceConfig":{"maxTokens":1e3}}`,
		`{"inferenceConfig":{"maxTokens":"1"}}`, `{"inferenceConfig":{"temperature":1e400}}`, `{"inferenceConfig":{"MaxTokens":1}}`,
		`{"inferenceConfig":{"stopSequences":[1]}}`, `{"inferenceConfig":[]}`, `{"toolConfig":{"tools":{}}}`, `{"toolConfig":{"tools":[1]}}`,
		`{"toolConfig":{"Tools":[]}}`, `{"toolConfig":{"tools":[],"tools":[]}}`, `{"additionalModelResponseFieldPaths":[1]}`,
		`{"requestMetadata":{"a":1}}`, `{"requestMetadata":[]}`,
		`{"messages":[{"content":[{"text":"a` + "\x01" + `"}]}]}`, `{"n":01}`, `{"n":1.}`, `{"n":-}`, `{"n":tru}`,
	} {
		if checkConverse(t, []byte(b)) {
			t.Errorf("spliceConverse took %q", b)
		}
		got, gerr := FingerprintBody(testModelID, []byte(b))
		want, werr := decodeFingerprintBody(testModelID, []byte(b))
		if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("FingerprintBody(%q) = %q, %v; the encoding/json path %q, %v", b, got, gerr, want, werr)
		}
	}
	for _, b := range []string{
		``, `[]`, `{"model":"m"}`, `{"MAX_TOKENS":1}`, `{"max_tokens":1.5}`, `{"max_tokens":1e2}`, `{"max_tokens":"1"}`, `{"top_k":1.0}`,
		`{"temperature":"x"}`, `{"top_p":1e-400}`, `{"messages":[{"content":1}]}`, `{"messages":[{"content":{}}]}`, `{"messages":[{"role":[]}]}`,
		`{"messages":[{"Content":"x"}]}`, `{"stop_sequences":"x"}`, `{"tools":[1]}`, `{"tools":{}}`, `{"messages":[],"messages":[]}`,
	} {
		if checkInvoke(t, []byte(b)) {
			t.Errorf("spliceInvoke took %q", b)
		}
		got, gerr := InvokeFingerprintBody(testModelID, []byte(b))
		want, werr := decodeInvokeFingerprintBody(testModelID, []byte(b))
		if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("InvokeFingerprintBody(%q) = %q, %v; the encoding/json path %q, %v", b, got, gerr, want, werr)
		}
	}
}

// FuzzFastPaths: on any body, the fast paths take only what the
// encoding/json paths accept, with the same hash.
func FuzzFastPaths(f *testing.F) {
	for _, b := range usualConverse {
		f.Add([]byte(b))
	}
	for _, b := range usualInvoke {
		f.Add([]byte(b))
	}
	f.Add([]byte(`{"messages":[{"role":"a","role":"b"}]}`))
	f.Add([]byte(`{"inferenceConfig":{"maxTokens":1.5}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkConverse(t, body)
		checkInvoke(t, body)
	})
}

// BenchmarkFastPaths: a 200 KB Converse body with cachePoints and a
// 200 KB InvokeModel body, through the fast paths and through the
// encoding/json paths they replace for such bodies.
func BenchmarkFastPaths(b *testing.B) {
	text := strings.Repeat(`The report says:\n revenue grew \"5%\" and costs fell.\n `, 4000)
	converse := []byte(`{"system":[{"text":"be brief"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"` + text + `"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"text":"ok"}]}],"inferenceConfig":{"maxTokens":100}}`)
	invoke := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"` + text + `"}]}`)
	for _, c := range []struct {
		name string
		fn   func(string, []byte) ([]byte, error)
		body []byte
	}{
		{"converse/splice", FingerprintBody, converse}, {"converse/decode", decodeFingerprintBody, converse},
		{"invoke/splice", InvokeFingerprintBody, invoke}, {"invoke/decode", decodeInvokeFingerprintBody, invoke},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn(testModelID, c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
