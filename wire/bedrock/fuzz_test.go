package bedrock_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// FuzzReader feeds arbitrary bytes to the eventstream relay's reader: it
// never panics, and every event it returns re-encodes to bytes it reads
// back the same.
func FuzzReader(f *testing.F) {
	events, _ := bedrock.EventsFromBody(converseBody)
	var buf []byte
	for _, ev := range events {
		buf = bedrock.AppendEvent(buf, ev)
	}
	f.Add(buf)
	f.Add(buf[:len(buf)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := bedrock.NewReader(bytes.NewReader(b))
		for range 1000 {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			again, err := bedrock.NewReader(bytes.NewReader(bedrock.AppendEvent(nil, ev))).Next()
			if err != nil || again.Name != ev.Name || !bytes.Equal(again.Data, ev.Data) {
				t.Fatalf("re-encoded %q: %v", ev.Name, err)
			}
		}
	})
}

// FuzzFingerprintBody: the Converse canonicalizer never panics, and adding
// a cachePoint block after the first system block never changes its output.
func FuzzFingerprintBody(f *testing.F) {
	f.Add([]byte(`{"system":[{"text":"x"}],"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"default"}}]}],"toolConfig":{"tools":[]}}`))
	f.Add([]byte(`{"system":"not an array"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := bedrock.FingerprintBody("us.m", body)
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return
		}
		var sys []json.RawMessage
		if json.Unmarshal(top["system"], &sys) != nil || sys == nil {
			return
		}
		sys = append(sys, json.RawMessage(`{"cachePoint":{"type":"default"}}`))
		top["system"], _ = json.Marshal(sys)
		with, _ := json.Marshal(top)
		b, err := bedrock.FingerprintBody("us.m", with)
		if err != nil {
			t.Fatalf("with a cachePoint: %v", err)
		}
		ca, errA := fingerprint.Canonicalize(a)
		cb, errB := fingerprint.Canonicalize(b)
		if (errA == nil) != (errB == nil) || !bytes.Equal(ca, cb) {
			t.Fatalf("a cachePoint changed the canonical body:\n%s\n%s", ca, cb)
		}
	})
}
