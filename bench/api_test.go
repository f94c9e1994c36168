package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// A miss's body is the generated body with the API's end-user id first:
// valid JSON, the id numbered, every other member unchanged.
func TestUniqueBodyPerAPI(t *testing.T) {
	for _, api := range []API{APIChat, APIMessages, APIResponses} {
		for _, spec := range []string{"small", "large"} {
			b, info, err := body(api, spec, false)
			if err != nil {
				t.Fatal(err)
			}
			if info.Messages < 3 {
				t.Errorf("%s %s: %d messages", api, spec, info.Messages)
			}
			u := uniqueBody(api, b, 7)
			var got, want map[string]json.RawMessage
			if err := json.Unmarshal(u, &got); err != nil {
				t.Fatalf("%s %s: %v", api, spec, err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			id := got[api.uniqueMember()]
			if !bytes.Contains(id, []byte(`"bench-7"`)) {
				t.Errorf("%s %s: %s is %s", api, spec, api.uniqueMember(), id)
			}
			if !bytes.HasPrefix(u, []byte(`{"`+api.uniqueMember()+`"`)) {
				t.Errorf("%s %s: the id is not the first member: %.60s", api, spec, u)
			}
			delete(got, api.uniqueMember())
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: other members changed", api, spec)
			}
		}
	}
	if _, err := ParseAPI("completions"); err == nil {
		t.Error("ParseAPI accepted an API the bench does not send")
	}
	if a, err := ParseAPI(""); err != nil || a != APIChat {
		t.Errorf(`ParseAPI(""): %q, %v; want chat`, a, err)
	}
}
