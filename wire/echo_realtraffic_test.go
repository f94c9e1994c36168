package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

// Every recorded Responses answer, body or stream, answering another caller
// (the recorded request with its echoed fields set to other values, placed
// after the rest): rewritten from the places the fingerprint's pass finds
// the values, it is byte for byte what parsing the whole request gives.
func TestEchoValuesRealTraffic(t *testing.T) {
	its, err := realtraffic.Load(realtraffic.Folder(t))
	if err != nil {
		t.Fatal(err)
	}
	names := fingerprint.NewNames(EchoFields(groundhog.ShapeResponses)...)
	other := map[string]json.RawMessage{
		"user": json.RawMessage(`"carol"`), "safety_identifier": json.RawMessage(`"carol-2"`),
		"metadata": json.RawMessage(`{"team":"b"}`), "prompt_cache_key": json.RawMessage(`"conversation-c"`),
	}
	bodies, streams, changed := 0, 0, 0
	for _, it := range its {
		if it.Meta.Route != "/v1/responses" || it.Meta.Status != 200 || len(it.Request) == 0 || it.Request[0] != '{' {
			continue
		}
		// The request as another caller sends it: its own echoed values,
		// written last, so they sit after everything else.
		req := bytes.TrimSpace(it.Request)
		var top map[string]json.RawMessage
		if json.Unmarshal(req, &top) != nil {
			continue
		}
		req = append([]byte(nil), req[:len(req)-1]...)
		for _, k := range []string{"user", "safety_identifier", "metadata", "prompt_cache_key"} {
			if _, ok := top[k]; !ok {
				req = append(append(append(req, `,"`...), k...), `":`...)
				req = append(req, other[k]...)
			}
		}
		req = append(req, '}')
		fp, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.ShapeResponses, Top: names}, req)
		if err != nil {
			t.Fatalf("%s: %v", it.ID, err)
		}
		vals := make([][]byte, len(EchoFields(groundhog.ShapeResponses)))
		for i := range vals {
			if sp := fp.Top[i]; sp.End > sp.Start {
				vals[i] = req[sp.Start:sp.End]
			}
		}
		if it.Meta.Stream {
			evs, _ := readAll(NewSSEReader(bytes.NewReader(it.Response)))
			want := NewEchoRewriter(groundhog.ShapeResponses, req).Events(evs)
			got := NewEchoRewriterValues(groundhog.ShapeResponses, vals).Events(evs)
			stored := &groundhog.Response{Status: 200, Streamed: true, Events: evs}
			indexed := IndexEcho(groundhog.ShapeResponses, stored).Rewrite(groundhog.ShapeResponses, vals, stored).Events
			for i := range evs {
				if !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("%s event %d:\n from the places %s\n parsing        %s", it.ID, i, got[i].Data, want[i].Data)
				}
				if !bytes.Equal(indexed[i].Data, want[i].Data) {
					t.Fatalf("%s event %d:\n through the index %s\n parsing          %s", it.ID, i, indexed[i].Data, want[i].Data)
				}
				if !bytes.Equal(got[i].Data, evs[i].Data) {
					changed++
				}
			}
			streams++
			continue
		}
		want := RewriteEcho(groundhog.ShapeResponses, req, it.Response)
		got := RewriteEchoValues(groundhog.ShapeResponses, vals, it.Response)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n from the places %s\n parsing        %s", it.ID, got, want)
		}
		stored := &groundhog.Response{Status: 200, Body: it.Response}
		if indexed := IndexEcho(groundhog.ShapeResponses, stored).Rewrite(groundhog.ShapeResponses, vals, stored).Body; !bytes.Equal(indexed, want) {
			t.Fatalf("%s:\n through the index %s\n parsing          %s", it.ID, indexed, want)
		}
		if !bytes.Equal(got, it.Response) {
			changed++
		}
		bodies++
	}
	if bodies < 50 || streams < 20 || changed < 50 {
		t.Fatalf("%d answers and %d streams checked, %d rewritten: too few", bodies, streams, changed)
	}
	t.Logf("%d answers and %d streams checked, %d answers or events rewritten", bodies, streams, changed)
}
