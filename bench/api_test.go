package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
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
			u := uniqueBody(api, b, 7, false)
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
}

// A cached miss's body is a new cache key each time; a miss's body with
// only the end-user id changed is the same key (the fingerprint leaves the
// id out), which is why the cached scenario needs the keyed member.
func TestKeyedBodyIsANewCacheKey(t *testing.T) {
	shapes := map[API]groundhog.Shape{APIChat: groundhog.ShapeChat, APIMessages: groundhog.ShapeMessages, APIResponses: groundhog.ShapeResponses}
	for api, shape := range shapes {
		b, _, err := body(api, "small", false)
		if err != nil {
			t.Fatal(err)
		}
		hash := func(i int64, keyed bool) string {
			res, err := fingerprint.Compute(fingerprint.Params{Shape: shape, Tenant: "t"}, uniqueBody(api, b, i, keyed))
			if err != nil {
				t.Fatalf("%s: %v", api, err)
			}
			return res.Hash
		}
		if hash(7, false) != hash(8, false) {
			t.Errorf("%s: the end-user id changed the key", api)
		}
		if hash(7, true) == hash(8, true) || hash(7, true) == hash(7, false) {
			t.Errorf("%s: the keyed member did not change the key", api)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(uniqueBody(api, b, 7, true), &got); err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if _, ok := got[api.keyedMember()]; !ok {
			t.Errorf("%s: no %s", api, api.keyedMember())
		}
	}
}

func TestParseAPI(t *testing.T) {
	if _, err := ParseAPI("completions"); err == nil {
		t.Error("ParseAPI accepted an API the bench does not send")
	}
	if a, err := ParseAPI(""); err != nil || a != APIChat {
		t.Errorf(`ParseAPI(""): %q, %v; want chat`, a, err)
	}
}

// A request file of the user's own may set the member the cached-miss
// scenario numbers (a Responses request's max_output_tokens, say): it is
// accepted, and only that scenario is left out. The member every miss
// scenario sets is refused with a clear error.
func TestBodyFileWithTheKeyedMember(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		api     API
		body    string
		refused bool
		keyed   bool
	}{
		{APIResponses, `{"model":"m","input":"hi","max_output_tokens":512}`, false, true},
		{APIChat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":1}`, false, true},
		{APIChat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, false, false},
		{APIChat, `{"model":"m","messages":[],"safety_identifier":"u"}`, true, false},
	} {
		f := filepath.Join(dir, "body.json")
		if err := os.WriteFile(f, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, info, err := body(tc.api, f, false)
		if (err != nil) != tc.refused {
			t.Errorf("%s %s: error %v, want refused %v", tc.api, tc.body, err, tc.refused)
		}
		if err == nil && info.keyed != tc.keyed {
			t.Errorf("%s %s: keyed %v, want %v", tc.api, tc.body, info.keyed, tc.keyed)
		}
	}
}
