package gateway

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// An answer's places are found once and then remembered for that answer;
// an equal answer elsewhere in memory gets its own, and an answer that
// echoes nothing has none.
func TestEchoIndexesRememberEachAnswer(t *testing.T) {
	ix := newEchoIndexes(1 << 20)
	shape := groundhog.ShapeResponses
	a := &groundhog.Response{Status: 200, Body: []byte(`{"id":"r","user":"alice"}`)}
	first := ix.of(shape, a)
	if first == nil || !first.For(shape, a) {
		t.Fatal("no index for a Responses answer")
	}
	if ix.of(shape, a) != first {
		t.Error("the index of the same answer was built again")
	}
	b := &groundhog.Response{Status: 200, Body: append([]byte(nil), a.Body...)}
	if ix.of(shape, b) == first {
		t.Error("another answer got the first one's index")
	}
	// Asked for as another shape, the answer does not get its Responses
	// places: a chat answer echoes nothing.
	if ix.of(groundhog.ShapeChat, a) != nil {
		t.Error("a chat answer echoes nothing")
	}
}
