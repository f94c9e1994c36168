package fingerprint_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/fingerprint"
)

// factNames are the names the differential tests ask Compute to look out
// for: names the seeds hold (store, content, role, model), names of the
// gateway's resource checks, a one-letter name and a long one.
// They are also the top-level names whose values the tests ask Compute to
// locate (Params.Top): nine names, so the last is beyond MaxTop.
var (
	factNameList = []string{"store", "content", "role", "model", "file_id", "container", "vector_store_ids", "a", "previous_response_id"}
	factNames    = fingerprint.NewNames(factNameList...)
)

// wantFacts computes what Compute reports besides the hash, the slow way:
// the body decoded by encoding/json for the names and the top-level
// "store", and the raw text walked as a string tokenizer for the escapes.
// body must be a JSON object Compute accepted.
func wantFacts(t *testing.T, body []byte) (store fingerprint.Store, names uint64, letterEsc bool) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("accepted body does not decode: %v", err)
	}
	if top, ok := v.(map[string]any); ok {
		switch top["store"] {
		case true:
			store = fingerprint.StoreTrue
		case false:
			store = fingerprint.StoreFalse
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, m := range v {
				names |= factNames.Bit(k)
				walk(m)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	in := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			if body[i+1] == 'u' {
				r, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 32)
				if err != nil {
					t.Fatalf("bad escape at %d in an accepted body", i)
				}
				letterEsc = letterEsc || (r >= 0x40 && r < 0x80)
				i += 5
			} else {
				i++
			}
		}
	}
	return store, names, letterEsc
}

// checkFacts checks the Store, Names and LetterEscapes of r, Compute's
// result for body with factNames as Names and Top, against wantFacts, and
// its Top against the top-level values as encoding/json reads them.
func checkFacts(t *testing.T, body []byte, r fingerprint.Result) {
	t.Helper()
	store, names, esc := wantFacts(t, body)
	if r.Store != store || r.Names != names || r.LetterEscapes != esc {
		t.Fatalf("Compute(%q): Store %d, Names %b, LetterEscapes %v; want %d, %b, %v", body, r.Store, r.Names, r.LetterEscapes, store, names, esc)
	}
	checkTop(t, body, r)
}

// checkTop checks r.Top, Compute's result for body with factNames as Top:
// the i-th span holds exactly the bytes encoding/json reads as the value
// of the top-level member named factNameList[i], and is zero when there is
// none or i is beyond MaxTop.
func checkTop(t *testing.T, body []byte, r fingerprint.Result) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("accepted body does not decode: %v", err)
	}
	for i, name := range factNameList {
		var sp fingerprint.Span
		if i < fingerprint.MaxTop {
			sp = r.Top[i]
		}
		want, ok := top[name]
		if !ok || i >= fingerprint.MaxTop {
			if sp != (fingerprint.Span{}) {
				t.Fatalf("Compute(%q): %q located at %v, want nothing", body, name, sp)
			}
			continue
		}
		if sp.Start < 0 || sp.End > len(body) || sp.Start >= sp.End || !bytes.Equal(body[sp.Start:sp.End], want) {
			t.Fatalf("Compute(%q): %q at %v, want the bytes %s", body, name, sp, want)
		}
	}
}

func TestFacts(t *testing.T) {
	for _, c := range []struct {
		body  string
		store fingerprint.Store
		names []string
		esc   bool
	}{
		{`{"model":"m"}`, fingerprint.StoreUnset, []string{"model"}, false},
		{`{"model":"m","store":true}`, fingerprint.StoreTrue, []string{"model", "store"}, false},
		{`{"model":"m","store":false}`, fingerprint.StoreFalse, []string{"model", "store"}, false},
		{`{"model":"m","store":null}`, fingerprint.StoreUnset, []string{"model", "store"}, false},
		{`{"model":"m","store":"yes"}`, fingerprint.StoreUnset, []string{"model", "store"}, false},
		// Only the top level says whether the call is stored.
		{`{"model":"m","metadata":{"store":true}}`, fingerprint.StoreUnset, []string{"model", "store"}, false},
		// Escaped spellings are the same names, and are letter escapes.
		{`{"st\u006fre":true,"x":[{"file\u005fid":"f"}]}`, fingerprint.StoreTrue, []string{"store", "file_id"}, true},
		// A value is not a name; an escaped '<' is not a letter.
		{`{"x":"container","y":"\u003cfile_id\u003e"}`, fingerprint.StoreUnset, nil, false},
		{`{"x":"\u0041"}`, fingerprint.StoreUnset, nil, true},
		{`{"x":"\u007f\u0080"}`, fingerprint.StoreUnset, nil, true},
		{`{"x":"\u003f\u0080\u00e9\ud83d\ude00"}`, fingerprint.StoreUnset, nil, false},
		// An escaped backslash followed by text that looks like an escape.
		{`{"x":"\\u0041"}`, fingerprint.StoreUnset, nil, false},
		{`{"tools":[{"type":"code_interpreter","container":"cntr_1"}],"a":{"vector_store_ids":[]}}`, fingerprint.StoreUnset, []string{"container", "vector_store_ids", "a"}, false},
		{`{"containers":1,"contain":2,"previous_response_ids":3}`, fingerprint.StoreUnset, nil, false},
		// Keys longer than any watched name, 64 bytes and more among them.
		{`{"` + strings.Repeat("k", 64) + `":1,"` + strings.Repeat("k", 200) + `":2}`, fingerprint.StoreUnset, nil, false},
	} {
		body := []byte(c.body)
		for _, long := range []bool{false, true} {
			if long { // the assembly scan and the string index
				body = append([]byte(`{"pad":"`+string(bytes.Repeat([]byte("p"), 600))+`",`), body[1:]...)
			}
			r, err := fingerprint.Compute(fingerprint.Params{Shape: "responses", Tenant: "t", Names: factNames, Top: factNames}, body)
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			var names uint64
			for _, n := range c.names {
				names |= factNames.Bit(n)
			}
			if r.Store != c.store || r.Names != names || r.LetterEscapes != c.esc {
				t.Errorf("%s: Store %d, Names %b, LetterEscapes %v; want %d, %b, %v", c.body, r.Store, r.Names, r.LetterEscapes, c.store, names, c.esc)
			}
			checkFacts(t, body, r)
			// Without names to look out for, none are reported or
			// located, and the names never change the hash.
			r2, _ := fingerprint.Compute(fingerprint.Params{Shape: "responses", Tenant: "t"}, body)
			if r2.Names != 0 || r2.Top != ([fingerprint.MaxTop]fingerprint.Span{}) || r2.Hash != r.Hash {
				t.Errorf("%s without names: Names %b, Top %v, hash %s vs %s", c.body, r2.Names, r2.Top, r2.Hash, r.Hash)
			}
		}
	}
}

// Top locates top-level values only, whatever their type and spacing, its
// keys decoded; a nested member of the same name is not located.
func TestTopLocatesTopLevelValues(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","store":false,"content":{"role":"x","store":true},"role" : [1, {"a":2}] ,"a":"\u0041\"b"}`,
		`{ "st\u006fre" : null , "file_id":-1.5e3,"container":"c","vector_store_ids":[],"previous_response_id":"r"}`,
		`{"x":{"store":true,"model":"n"},"y":[{"role":"r"}]}`,
		"{\n\t\"a\"\t:\ttrue\n}",
	} {
		for _, long := range []bool{false, true} {
			b := []byte(body)
			if long { // the assembly scan and the string index
				b = append([]byte(`{"pad":"`+strings.Repeat("p", 600)+`",`), bytes.TrimLeft(b, " {")...)
			}
			r, err := fingerprint.Compute(fingerprint.Params{Shape: "responses", Tenant: "t", Top: factNames}, b)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			checkTop(t, b, r)
		}
	}
}

func TestNewNamesRefusesWhatItCannotHold(t *testing.T) {
	for _, names := range [][]string{{""}, {string(bytes.Repeat([]byte("n"), 64))}, make([]string, 65)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewNames(%d names, first %q) did not panic", len(names), names[0])
				}
			}()
			fingerprint.NewNames(names...)
		}()
	}
	if fingerprint.NewNames("a", "b").Bit("c") != 0 {
		t.Error("a name not in the set has a bit")
	}
}
