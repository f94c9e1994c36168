package benchbody

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestChatIsDeterministicValidAndSized(t *testing.T) {
	for _, size := range []int{1 << 10, 200 << 10} {
		b := Chat(size, Options{Model: "sim-small"})
		if !json.Valid(b) {
			t.Fatalf("%d: not valid JSON", size)
		}
		if len(b) < size || len(b) > size+size/20+2048 {
			t.Errorf("%d: got %d bytes", size, len(b))
		}
		if !bytes.Equal(b, Chat(size, Options{Model: "sim-small"})) {
			t.Errorf("%d: not deterministic", size)
		}
	}
	large := Chat(200<<10, Options{})
	if n := Messages(large); n < 300 || n > 380 {
		t.Errorf("200 KB body has %d messages, want about 340", n)
	}
	var v struct {
		Tools  []json.RawMessage `json:"tools"`
		Stream bool              `json:"stream"`
	}
	if err := json.Unmarshal(Chat(200<<10, Options{Stream: true}), &v); err != nil || len(v.Tools) != 8 || !v.Stream {
		t.Errorf("200 KB body: %d tools, stream %v, err %v", len(v.Tools), v.Stream, err)
	}
}
