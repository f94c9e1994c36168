package gateway

import (
	"bytes"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// A follower waits as long as its flight runs and keeps only what it still
// reads of its request: a Responses follower its echoed values (tens of
// bytes of a 40 KB request of instructions), in one buffer, a missing value
// still missing; a chat follower nothing; one whose fingerprint was not
// taken of its body an exact copy of it.
func TestFollowerKeepsOnlyItsEchoedValues(t *testing.T) {
	instructions := strings.Repeat("Follow the conventions. ", 40<<10/24)
	body := []byte(`{"model":"m","stream":true,"user":"agent-7","metadata":{"task":"refactor"},"instructions":"` + instructions + `","input":"go"}`)
	c := &call{shape: groundhog.ShapeResponses, fpIsBody: true}
	c.body = bytes.Clone(body)
	fp, err := fingerprint.Compute(fingerprint.Params{Shape: c.shape, Tenant: "t", Top: echoNames[c.shape]}, c.body)
	if err != nil {
		t.Fatal(err)
	}
	c.fp = fp
	want, _ := echoValues(c)
	for i := range want {
		want[i] = bytes.Clone(want[i])
	}
	buf := c.body
	keepForFollowing(c)
	if c.body != nil {
		t.Fatalf("the follower kept its %d-byte body", len(c.body))
	}
	got, ok := echoValues(c)
	if !ok || len(got) != len(want) {
		t.Fatalf("echoValues after: %d values, ok %v; want %d", len(got), ok, len(want))
	}
	kept := 0
	for i := range want {
		if (want[i] == nil) != (got[i] == nil) || !bytes.Equal(want[i], got[i]) {
			t.Errorf("value %d: %q, want %q", i, got[i], want[i])
		}
		kept += len(got[i])
	}
	if w := len(`"agent-7"`) + len(`{"task":"refactor"}`); kept != w {
		t.Errorf("the follower keeps %d bytes of values, want %d", kept, w)
	}
	clear(buf) // the request's buffer reused: the values kept are the follower's own
	if again, _ := echoValues(c); !bytes.Equal(again[0], []byte(`"agent-7"`)) {
		t.Errorf("the kept values read the request's buffer: %q", again[0])
	}

	chat := &call{shape: groundhog.ShapeChat, body: []byte(`{"model":"m"}`), fpIsBody: true}
	keepForFollowing(chat)
	if chat.body != nil || chat.echoVals != nil {
		t.Errorf("a chat follower keeps %q, %q", chat.body, chat.echoVals)
	}
	other := &call{shape: groundhog.ShapeResponses, body: []byte(`{"model":"m","user":"u"}`)} // fingerprint of another body
	orig := other.body
	keepForFollowing(other)
	if !bytes.Equal(other.body, orig) || &other.body[0] == &orig[0] || other.echoVals != nil {
		t.Errorf("a follower whose fingerprint is not of its body: kept %q (a copy: %v)", other.body, &other.body[0] != &orig[0])
	}
}
