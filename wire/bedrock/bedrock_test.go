package bedrock_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

var converseBody = []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"hello there"},{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":7,"totalTokens":1517,"cacheReadInputTokens":1000,"cacheWriteInputTokens":500,"cacheDetails":[{"ttl":"1h","inputTokens":200},{"ttl":"5m","inputTokens":300}]},"metrics":{"latencyMs":42}}`)

func TestEventStreamRoundTrip(t *testing.T) {
	events, err := bedrock.EventsFromBody(converseBody)
	if err != nil {
		t.Fatal(err)
	}
	events = append(events[:len(events):len(events)], bedrock.ExceptionEvent("ThrottlingException", "slow down"))
	var buf []byte
	for _, ev := range events {
		buf = bedrock.AppendEvent(buf, ev)
	}
	rd := bedrock.NewReader(bytes.NewReader(buf))
	for i, want := range events {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got.Name != want.Name || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("event %d = %s %s, want %s %s", i, got.Name, got.Data, want.Name, want.Data)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
	// A stream cut inside a message is never a clean end.
	for _, cut := range []int{3, 13, len(buf) - 2} {
		rd := bedrock.NewReader(bytes.NewReader(buf[:cut]))
		var err error
		for err == nil {
			_, err = rd.Next()
		}
		if !errors.Is(err, bedrock.ErrMalformedStream) {
			t.Errorf("cut at %d: %v, want ErrMalformedStream", cut, err)
		}
	}
}

func TestConvertRoundTrip(t *testing.T) {
	events, err := bedrock.EventsFromBody(converseBody)
	if err != nil {
		t.Fatal(err)
	}
	if !bedrock.StreamComplete(events) {
		t.Fatal("synthesized stream is not complete")
	}
	if !bedrock.IsTerminal(events[len(events)-1]) {
		t.Fatal("last event is not terminal")
	}
	body, err := bedrock.BodyFromEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(converseBody, &a)
	json.Unmarshal(body, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("round trip:\n got %s\nwant %s", jb, ja)
	}
	if bedrock.StreamComplete(events[:len(events)-1]) {
		t.Fatal("a stream without metadata is complete")
	}
}

func TestUsage(t *testing.T) {
	u, err := bedrock.UsageFromBody(converseBody)
	if err != nil {
		t.Fatal(err)
	}
	want := groundhog.Usage{InputTokens: 1510, CachedInputTokens: 1000, CacheWriteTokens: 500, CacheWrite1hTokens: 200, OutputTokens: 7}
	if u != want {
		t.Fatalf("usage = %+v, want %+v", u, want)
	}
	events, _ := bedrock.EventsFromBody(converseBody)
	if u2, _ := bedrock.UsageFromEvents(events); u2 != want {
		t.Fatalf("stream usage = %+v, want %+v", u2, want)
	}
	if back, _ := bedrock.UsageOf(want).Usage(); back != want {
		t.Fatalf("UsageOf round trip = %+v", back)
	}
}

func TestFingerprintBodyIgnoresCachePoints(t *testing.T) {
	with := []byte(`{"system":[{"text":"be brief"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"default","ttl":"1h"}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{}}}},{"cachePoint":{"type":"default"}}]},"inferenceConfig":{"maxTokens":100}}`)
	without := []byte(`{ "inferenceConfig":{"maxTokens":1e2},"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"be brief"}],"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{}}}}]}}`)
	a, err := bedrock.FingerprintBody("us.anthropic.claude-x", with)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bedrock.FingerprintBody("us.anthropic.claude-x", without)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(a, []byte("cachePoint")) {
		t.Fatalf("cachePoint left in %s", a)
	}
	var va, vb any
	json.Unmarshal(a, &va)
	json.Unmarshal(b, &vb)
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("with cachePoints %s\nwithout %s", ja, jb)
	}
	if !bytes.Contains(a, []byte(`"model":"us.anthropic.claude-x"`)) {
		t.Fatalf("model id missing: %s", a)
	}
	if _, err := bedrock.FingerprintBody("m", []byte(`[1]`)); err == nil {
		t.Fatal("an array body was accepted")
	}
}

func TestPath(t *testing.T) {
	for _, id := range []string{"anthropic.claude-3-haiku-20240307-v1:0", "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"global.anthropic.claude-haiku-4-5", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0"} {
		for _, stream := range []bool{false, true} {
			got, s, ok := bedrock.ParsePath(bedrock.Path(id, stream))
			if !ok || got != id || s != stream {
				t.Errorf("ParsePath(Path(%q, %v)) = %q %v %v", id, stream, got, s, ok)
			}
		}
	}
	if got := bedrock.BaseModel("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-x"); got != "anthropic.claude-x" {
		t.Errorf("BaseModel = %q", got)
	}
}

func TestParsePassthrough(t *testing.T) {
	for _, c := range []struct {
		path, want string
		ok         bool
	}{
		{"/model/us.anthropic.claude-x%3A0/invoke", "/model/us.anthropic.claude-x%3A0/invoke", true},
		{"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.m/invoke-with-response-stream", "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.m/invoke-with-response-stream", true},
		{"/model/m/count-tokens", "/model/m/count-tokens", true},
		{"/guardrail/g1/version/2/apply", "/guardrail/g1/version/2/apply", true},
		{"/async-invoke", "/async-invoke", true},
		{"/model/%2E%2E/invoke", "", false},
		{"/model/m/../../v1/invoke", "", false},
		{"/model//invoke", "", false},
		{"/model/m/converse-other", "", false},
		{"/guardrail/g/version/1/other", "", false},
	} {
		p, ok := bedrock.ParsePassthrough(c.path)
		if ok != c.ok || p.Path != c.want {
			t.Errorf("ParsePassthrough(%q) = %q %v, want %q %v", c.path, p.Path, ok, c.want, c.ok)
		}
	}
}
