package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// checkSplice holds spliceModel to the encoding/json path it stands in
// for: a body it takes is one the general path accepts, and the two hash
// the same (the fingerprint reads both, or refuses both); a body that is
// not JSON it never takes.
func checkSplice(t *testing.T, body []byte) (taken bool) {
	t.Helper()
	const model = "gemini-2.5-flash"
	fast, keys, ok := spliceModel(model, body)
	if !ok {
		return false
	}
	if !json.Valid(body) {
		t.Fatalf("spliceModel took %q, which is not JSON", body)
	}
	slow, err := decodeFingerprintBody(model, body)
	if err != nil {
		t.Fatalf("spliceModel took %q, which the general path refuses: %v", body, err)
	}
	p := fingerprint.Params{Shape: groundhog.ShapeGemini, Tenant: "t"}
	rf, ferr := fingerprint.Compute(p, fast)
	rs, serr := fingerprint.Compute(p, slow)
	if (ferr == nil) != (serr == nil) || ferr == nil && rf != rs {
		t.Fatalf("%q: spliced %+v %v, decoded %+v %v", body, rf, ferr, rs, serr)
	}
	if ferr == nil && rf.Model != model {
		t.Fatalf("%q: the spliced body's model is %q", body, rf.Model)
	}
	// The keys it noted never miss a reference BodyRefs finds.
	if refs, err := BodyRefs(body); err == nil {
		if len(refs.Caches)+len(CachedContentRefs(body)) > 0 && !keys.Cache || len(refs.Files)+len(refs.FileSearchStores)+len(refs.TunedModels) > 0 && !keys.Resource {
			t.Fatalf("%q names %+v; the pass noted %+v", body, refs, keys)
		}
	}
	return true
}

// usualBodies are generateContent bodies as the SDKs and REST examples
// send them.
var usualBodies = []string{
	`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	`{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"a \"quote\", a <tag> & \u00e9\n"}]}],"generationConfig":{"temperature":0.5,"maxOutputTokens":1024,"topP":0.95,"stopSequences":["\n\n"]}}`,
	`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"reads","parameters":{"type":"OBJECT","properties":{"path":{"type":"STRING"}},"required":["path"]}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`,
	"{\n  \"contents\": [\n    {\"role\": \"user\", \"parts\": [{\"inlineData\": {\"mimeType\": \"image/png\", \"data\": \"iVBORw0KGgo=\"}}, {\"fileData\": {\"fileUri\": \"https://generativelanguage.googleapis.com/v1beta/files/abc\"}}]}\n  ],\n  \"safetySettings\": [{\"category\": \"HARM_CATEGORY_HARASSMENT\", \"threshold\": \"BLOCK_NONE\"}]\n}\n",
	`{"cachedContent":"cachedContents/abc","contents":[]}`,
	`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"n":-1.5e-3,"ok":true,"v":null,"z":0,"a":[1,2,{"b":[]}]}}}]}],"labels":{"team":"x"}}`,
	`{"contents":[null,{"parts":[]}],"tools":null,"systemInstruction":null,"cachedContent":null}`,
}

func TestSpliceModelTakesTheUsualBodies(t *testing.T) {
	for _, b := range usualBodies {
		if !checkSplice(t, []byte(b)) {
			t.Errorf("spliceModel left %s to the general path", b)
		}
	}
	// And a 200 KB conversation.
	text := strings.Repeat(`The report says:\n revenue grew \"5%\" and costs fell.\n `, 4000)
	long := `{"contents":[{"role":"user","parts":[{"text":"` + text + `"}]},{"role":"model","parts":[{"text":"ok"}]}]}`
	if !checkSplice(t, []byte(long)) {
		t.Error("spliceModel left a long conversation to the general path")
	}
}

func TestSpliceModelNotesReferenceKeys(t *testing.T) {
	for body, want := range map[string]RefKeys{
		`{"contents":[{"parts":[{"text":"a file, a cached model"}]}]}`:                               {Known: true},
		`{"contents":[{"parts":[{"fileData":{"fileUri":"files/abc","mimeType":"text/plain"}}]}]}`:    {Known: true, Resource: true},
		`{"contents":[{"parts":[{"file_data":{"FILE_URI":"files/abc"}}]}]}`:                          {Known: true, Resource: true},
		`{"cachedContent":"cachedContents/a","contents":[]}`:                                         {Known: true, Cache: true},
		`{"contents":[{}],"tools":[{"fileSearch":{"fileSearchStoreNames":["fileSearchStores/s"]}}]}`: {Known: true, Resource: true},
		`{"contents":[{"parts":[{"text":"x"}]}],"x":{"tuned_model":"tunedModels/t"}}`:                {Known: true, Resource: true},
		`{"contents":[{"parts":[{"fil\u0065Data":{}}]}]}`:                                            {Known: true, Cache: true, Resource: true},
		`{"model":"m","contents":[{}]}`:                                                              {},
	} {
		_, got, _ := spliceModel("gemini-2.5-flash", []byte(body))
		if got != want {
			t.Errorf("%s: noted %+v, want %+v", body, got, want)
		}
	}
}

func TestSpliceModelLeavesTheRest(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat(`}`, 600)
	for _, b := range []string{
		``, `[]`, `null`, `{}`, `"x"`, `{"contents":[{"parts":[]}]`, `{"contents":[{"parts":[]}]} x`, `{"contents":[{"parts":[]}],}`,
		`{"contents":[]}`, `{"contents":null}`, `{"contents":"not an array"}`, `{"contents":[1]}`, `{"contents":{}}`,
		`{"contents":[{}],"systemInstruction":"be brief"}`, `{"contents":[{}],"tools":{}}`, `{"contents":[{}],"cachedContent":1}`,
		`{"contents":[{}],"generationConfig":[]}`, `{"contents":[{}],"safetySettings":[[]]}`,
		`{"model":"other","contents":[{}]}`, `{"Model":"other","contents":[{}]}`, `{"Contents":[{}]}`, `{"contents":[{}],"CONTENTS":"x"}`,
		`{"cont\u0065nts":[{}]}`, `{"contents":[{}],"contents":[{}]}`, `{"cachedContent":"a","cachedContent":"b"}`, `{"contentſ":[{}]}`,
		`{"contents":[{}],"x":` + deep + `}`,
		`{"contents":[{"parts":[{"text":"a` + "\x01" + `"}]}]}`, `{"contents":[{"parts":[{"text":"\x"}]}]}`, `{"contents":[{"parts":[{"text":"\u12"}]}]}`,
		`{"contents":[{}],"n":01}`, `{"contents":[{}],"n":1.}`, `{"contents":[{}],"n":-}`, `{"contents":[{}],"n":1e}`, `{"contents":[{}],"n":tru}`,
	} {
		if checkSplice(t, []byte(b)) {
			t.Errorf("spliceModel took %q", b)
		}
		// Whatever path answers, the answer is the general path's.
		got, gerr := FingerprintBody("gemini-2.5-flash", []byte(b))
		want, werr := decodeFingerprintBody("gemini-2.5-flash", []byte(b))
		if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("FingerprintBody(%q) = %q, %v; the general path %q, %v", b, got, gerr, want, werr)
		}
	}
}

// FuzzSpliceModel: on any body, spliceModel takes only what the general
// path accepts, with the same hash.
func FuzzSpliceModel(f *testing.F) {
	for _, b := range usualBodies {
		f.Add([]byte(b))
	}
	f.Add([]byte(`{"contents":[{}],"contents":[{}]}`))
	f.Add([]byte(`{"Contents":[{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSplice(t, body)
	})
}

// BenchmarkFingerprintBody: a 200 KB conversation through FingerprintBody
// (one pass) and through the encoding/json path it replaced for such
// bodies.
func BenchmarkFingerprintBody(b *testing.B) {
	text := strings.Repeat(`The report says:\n revenue grew \"5%\" and costs fell.\n `, 4000)
	body := []byte(`{"contents":[{"role":"user","parts":[{"text":"` + text + `"}]},{"role":"model","parts":[{"text":"ok"}]}],"generationConfig":{"temperature":0.2}}`)
	for name, fn := range map[string]func(string, []byte) ([]byte, error){"splice": FingerprintBody, "decode": decodeFingerprintBody} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := fn("gemini-2.5-flash", body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
