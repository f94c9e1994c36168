package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/wire"
)

var refShapes = []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages}

// checkNameFacts checks, for a body the fingerprint accepts, that what the
// gateway learns from the fingerprint's pass is what it would learn from
// the bytes: a body whose resources wire.BodyRefs finds is one
// mayNameResource says may name some (with the fingerprint's facts and
// without), and the fingerprint's Store is what wire.Stores reads.
func checkNameFacts(t *testing.T, body []byte) {
	t.Helper()
	for _, shape := range refShapes {
		fp, err := fingerprint.Compute(fingerprint.Params{Shape: shape, Tenant: "t", Names: watchedNames}, body)
		if err != nil {
			return
		}
		refs := wire.BodyRefs(body)
		named := len(refs.Files)+len(refs.Containers)+len(refs.VectorStores)+len(refs.Conversations)+len(refs.Responses) > 0
		if named && !mayNameResource(shape, body, &fp) {
			t.Fatalf("%s body %q names %+v, but the fingerprint's facts say it cannot", shape, body, refs)
		}
		// The bytes alone are searched for what each shape is read for;
		// a Responses body for everything.
		if named && shape == groundhog.ShapeResponses && !mayNameResource(shape, body, nil) {
			t.Fatalf("%s body %q names %+v, but its bytes say it cannot", shape, body, refs)
		}
		if shape == groundhog.ShapeMessages {
			continue
		}
		stores := shape == groundhog.ShapeResponses
		switch fp.Store {
		case fingerprint.StoreTrue:
			stores = true
		case fingerprint.StoreFalse:
			stores = false
		}
		if want := wire.Stores(shape, body); stores != want && !foldedStore(body) {
			t.Fatalf("%s body %q: stored %v from the fingerprint, %v from wire.Stores", shape, body, stores, want)
		}
	}
}

// foldedStore reports whether body's top level has a member named "store"
// in other letter cases (encoding/json, behind wire.Stores, matches it;
// the provider does not, nor does the fingerprint).
func foldedStore(body []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	for k := range top {
		if k != "store" && strings.EqualFold(k, "store") {
			return true
		}
	}
	return false
}

// nameBodies spell every resource a body can name, plainly and escaped,
// at the top and nested, in short bodies and in bodies long enough for
// the fingerprint's assembly scan and string index.
func nameBodies() []string {
	var bodies []string
	pad := strings.Repeat(`text with \"quotes\" and \n newlines `, 40)
	for _, member := range []string{
		`"container":"cntr_1"`, `"cont\u0061iner":"cntr_1"`, `"vector_store_ids":["vs_1"]`, `"vector\u005fstore_ids":["vs_1"]`,
		`"conversation":"conv_1"`, `"conversation":{"id":"conv_1"}`, `"c\u006fnversation":"conv_1"`,
		`"previous_response_id":"resp_1"`, `"previous\u005Fresponse_id":"resp_1"`,
		`"training_file":"file-1"`, `"validation\u005ffile":"file-1"`, `"file_id":"file-1"`, `"file\u005fid":"file-1"`,
		`"file_ids":["file-1"]`, `"source":{"type":"file_id","id":"file-1"}`, `"source":{"type":"file\u005fid","id":"file-1"}`,
		`"store":true`, `"store":false`, `"st\u006fre":false`, `"store":null`, `"Store":true`, `"metadata":{"store":true,"file_id":"x"}`,
		`"x":"container"`, `"x":"\u003cfile\u003e"`,
	} {
		for _, b := range []string{
			`{"model":"m",` + member + `}`,
			`{"model":"m","input":[{"role":"user","content":"` + pad + `"}],` + member + `}`,
			`{"model":"m","tools":[{"type":"code_interpreter",` + member + `}],"input":"` + pad + `"}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{` + member + `}}]}]}`,
		} {
			bodies = append(bodies, b)
		}
	}
	return bodies
}

func TestNameFactsMatchTheBytes(t *testing.T) {
	for _, b := range nameBodies() {
		checkNameFacts(t, []byte(b))
	}
	// And the facts do not find what is not there: a plain body names
	// nothing, a container and an escaped letter may.
	plain := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	cntr := []byte(`{"model":"m","tools":[{"type":"code_interpreter","container":"cntr_1"}]}`)
	for _, c := range []struct {
		shape groundhog.Shape
		body  []byte
		want  bool
	}{
		{groundhog.ShapeChat, plain, false}, {groundhog.ShapeMessages, plain, false}, {groundhog.ShapeChat, cntr, true},
		{groundhog.ShapeChat, []byte(`{"model":"m","messages":[{"role":"user","content":"a container \u003cb\u003e"}]}`), false},
		{groundhog.ShapeResponses, []byte(`{"model":"m","input":"\u0041"}`), true},
	} {
		fp, err := fingerprint.Compute(fingerprint.Params{Shape: c.shape, Tenant: "t", Names: watchedNames}, c.body)
		if err != nil {
			t.Fatal(err)
		}
		if got := mayNameResource(c.shape, c.body, &fp); got != c.want {
			t.Errorf("%s %s: may name a resource %v, want %v", c.shape, c.body, got, c.want)
		}
	}
}

// FuzzNameFacts: for any body, the fingerprint's facts never miss a
// resource the body names, nor read "store" otherwise than wire.Stores.
func FuzzNameFacts(f *testing.F) {
	for _, b := range nameBodies() {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkNameFacts(t, body)
	})
}

// BenchmarkMayNameResource: what a keyed gateway runs on every model
// call's body to find the resources it may name — the search, and the
// parse (wire.BodyRefs) when the search cannot rule them out — from the
// bytes (what every call paid before the fingerprint reported its facts,
// and what a body the fingerprint did not read still pays) and from the
// fingerprint's facts, on a 200 KB agent transcript that names none. Its
// tools include one named read_file, which ends in _file": the search of
// the bytes for a Responses call finds it and parses the body.
func BenchmarkMayNameResource(b *testing.B) {
	body := benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"})
	for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses} {
		fp, err := fingerprint.Compute(fingerprint.Params{Shape: shape, Tenant: "t", Names: watchedNames}, body)
		if err != nil {
			b.Fatal(err)
		}
		for _, facts := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s,facts=%v", shape, facts), func(b *testing.B) {
				f := &fp
				if !facts {
					f = nil
				}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if mayNameResource(shape, body, f) {
						if refs := wire.BodyRefs(body); len(refs.Files)+len(refs.Containers)+len(refs.VectorStores)+len(refs.Conversations)+len(refs.Responses) > 0 {
							b.Fatalf("the benchmark body names %+v", refs)
						}
					}
				}
			})
		}
	}
}
