package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzParseMessage: any body is either refused with a JSON-RPC error code or
// accepted as one JSON-RPC 2.0 message (not a batch) whose id, if any, is a
// string, a number or null — never a panic.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		` [{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":1,"method":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseMessage(body)
		if err != nil {
			if c := codeOf(err); c != codeParse && c != codeInvalidRequest {
				t.Fatalf("error code %d for %q", c, body)
			}
			return
		}
		if m.JSONRPC != "2.0" || !validID(m.ID) || m.Method == "" && len(m.Result) == 0 && len(m.Error) == 0 {
			t.Fatalf("accepted %q as %+v", body, m)
		}
		if len(m.ID) > 0 {
			var v any
			if err := json.Unmarshal(m.ID, &v); err != nil {
				t.Fatalf("id %q is not JSON", m.ID)
			}
			switch v.(type) {
			case string, float64, nil:
			default:
				t.Fatalf("accepted id %s of type %T", m.ID, v)
			}
		}
	})
}
