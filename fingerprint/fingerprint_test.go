package fingerprint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// -update rewrites testdata/golden/hashes.jsonl. Only for a deliberate
// change of the hash scheme, which invalidates every cache entry and must
// come with a new versionTag.
var update = flag.Bool("update", false, "rewrite testdata/golden/hashes.jsonl")

// goldenCase is one request of a golden group. Bodies are kept as raw JSON
// so their exact spelling (whitespace, escapes, number forms) reaches
// Compute.
type goldenCase struct {
	Shape    groundhog.Shape `json:"shape"`
	Tenant   string          `json:"tenant"`
	Versions string          `json:"versions"`
	Body     json.RawMessage `json:"body"`
}

type goldenGroup struct {
	Name  string          `json:"name"`
	Shape groundhog.Shape `json:"shape"` // default for the cases
	Cases []goldenCase    `json:"cases"`
}

func readJSONL[T any](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return out
}

func (g goldenGroup) hashes(t *testing.T) []string {
	t.Helper()
	var hs []string
	for i, c := range g.Cases {
		if c.Shape == "" {
			c.Shape = g.Shape
		}
		r, err := Compute(Params{Shape: c.Shape, Tenant: c.Tenant, Versions: c.Versions}, c.Body)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		hs = append(hs, r.Hash)
	}
	return hs
}

func TestGoldenSame(t *testing.T) {
	for _, g := range readJSONL[goldenGroup](t, "same.jsonl") {
		t.Run(g.Name, func(t *testing.T) {
			if len(g.Cases) < 2 {
				t.Fatal("a group needs at least two cases")
			}
			hs := g.hashes(t)
			for i := 1; i < len(hs); i++ {
				if hs[i] != hs[0] {
					t.Errorf("case %d hashes %s, case 0 %s\n  %s\n  %s", i, hs[i], hs[0], g.Cases[i].Body, g.Cases[0].Body)
				}
			}
		})
	}
}

func TestGoldenDiffer(t *testing.T) {
	for _, g := range readJSONL[goldenGroup](t, "differ.jsonl") {
		t.Run(g.Name, func(t *testing.T) {
			if len(g.Cases) < 2 {
				t.Fatal("a group needs at least two cases")
			}
			seen := map[string]int{}
			for i, h := range g.hashes(t) {
				if j, ok := seen[h]; ok {
					t.Errorf("cases %d and %d hash the same:\n  %s\n  %s", j, i, g.Cases[j].Body, g.Cases[i].Body)
				}
				seen[h] = i
			}
		})
	}
}

// knownHash pins the hash of a fixed request. A failure here means the hash
// scheme changed: every stored cache key, operation record and ledger
// repeat count computed before would silently stop matching.
type knownHash struct {
	Name      string          `json:"name"`
	Shape     groundhog.Shape `json:"shape"`
	Tenant    string          `json:"tenant"`
	Versions  string          `json:"versions"`
	Body      json.RawMessage `json:"body"`
	Canonical string          `json:"canonical"` // the canonical body that is hashed (after exclusions)
	Hash      string          `json:"hash"`
}

func TestGoldenHashes(t *testing.T) {
	const file = "hashes.jsonl"
	known := readJSONL[knownHash](t, file)
	var rewritten bytes.Buffer
	for _, k := range known {
		r, err := Compute(Params{Shape: k.Shape, Tenant: k.Tenant, Versions: k.Versions}, k.Body)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		// The hash must be exactly the documented framing over the
		// canonical body, recomputed here independently.
		if want := frameHash(k.Shape, k.Tenant, k.Versions, k.Canonical); !*update && r.Hash != want {
			t.Errorf("%s: Compute = %s, but the documented framing of %s gives %s", k.Name, r.Hash, k.Canonical, want)
		}
		if *update {
			k.Hash = r.Hash
			k.Canonical = canonicalBody(t, k.Shape, k.Body)
			line, err := json.Marshal(k)
			if err != nil {
				t.Fatal(err)
			}
			rewritten.Write(line)
			rewritten.WriteByte('\n')
			continue
		}
		if r.Hash != k.Hash {
			t.Errorf("%s: hash changed: got %s, pinned %s (changing it invalidates every cache; bump versionTag and run -update)", k.Name, r.Hash, k.Hash)
		}
		if got := canonicalBody(t, k.Shape, k.Body); got != k.Canonical {
			t.Errorf("%s: canonical body\n got  %s\n want %s", k.Name, got, k.Canonical)
		}
	}
	if *update {
		if err := os.WriteFile(filepath.Join("testdata", "golden", file), rewritten.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// canonicalBody returns the canonical body Compute hashes, rebuilt from the
// outside: the body with the shape's excluded paths removed, canonicalized.
func canonicalBody(t *testing.T, shape groundhog.Shape, body []byte) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keep big integers exact, as Compute does
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, f := range excluded[shape] {
		v = removePath(v, strings.Split(f.Path, "."))
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonicalize(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// removePath deletes the member at path (rules.go syntax) from v.
func removePath(v any, path []string) any {
	seg := path[0]
	name, stars := strings.TrimRight(seg, "[*]"), strings.Count(seg, "[*]")
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if len(path) == 1 {
		delete(obj, name)
		return obj
	}
	child, ok := obj[name]
	if !ok {
		return obj
	}
	var walk func(v any, stars int) any
	walk = func(v any, stars int) any {
		if stars == 0 {
			return removePath(v, path[1:])
		}
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		for i := range arr {
			arr[i] = walk(arr[i], stars-1)
		}
		return arr
	}
	obj[name] = walk(child, stars)
	return obj
}

// frameHash is the package doc's hash definition, written out.
func frameHash(shape groundhog.Shape, tenant, versions, canonical string) string {
	h := sha256.New()
	for _, part := range []string{"groundhog-fp-v2", string(shape), tenant, versions, canonical} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func TestComputeResult(t *testing.T) {
	hashRE := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	for _, tc := range []struct {
		name, body string
		model      string
		stream     bool
	}{
		{"plain", `{"model":"gpt-4o","messages":[]}`, "gpt-4o", false},
		{"escaped model", `{"model":"gpt\u002d4o\/mini","messages":[]}`, "gpt-4o/mini", false},
		{"model with quote", `{"model":"a\"b"}`, `a"b`, false},
		{"missing model", `{"messages":[]}`, "", false},
		{"stream true", `{"stream":true,"model":"m"}`, "m", true},
		{"stream false", `{"stream":false,"model":"m"}`, "m", false},
		{"stream null", `{"stream":null,"model":"m"}`, "m", false},
		{"nested stream does not count", `{"model":"m","x":{"stream":true}}`, "m", false},
		{"nested model does not count", `{"x":{"model":"n"}}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(Params{Shape: groundhog.ShapeChat}, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != tc.model || r.Stream != tc.stream || !hashRE.MatchString(r.Hash) {
				t.Errorf("Compute = %+v, want model %q stream %v", r, tc.model, tc.stream)
			}
		})
	}
}

func TestComputeErrors(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "}"
	for _, tc := range []struct {
		name  string
		shape groundhog.Shape
		body  string
		msg   string
	}{
		{"malformed", "chat", `{"model":`, "request body is not valid JSON: unexpected end of input at offset 9"},
		{"empty", "chat", ``, "request body is not valid JSON: unexpected end of input at offset 0"},
		{"trailing garbage", "chat", `{"model":"m"}}`, "request body is not valid JSON: unexpected character '}' after top-level value at offset 13"},
		{"two objects", "chat", `{}{}`, "request body is not valid JSON: unexpected character '{' after top-level value at offset 2"},
		{"top-level array", "chat", `[{"model":"m"}]`, "request body must be a JSON object"},
		{"top-level string", "chat", ` "hi" `, "request body must be a JSON object"},
		{"top-level null", "chat", `null`, "request body must be a JSON object"},
		{"malformed array is malformed, not an array", "chat", `[1,`, "request body is not valid JSON: unexpected end of input at offset 3"},
		{"invalid UTF-8", "chat", "{\"model\":\"m\",\"messages\":[{\"content\":\"caf\xe9\"}]}", "request body is not valid JSON: invalid UTF-8 in string at offset 40"},
		{"lone surrogate", "chat", `{"messages":[{"content":"\udead"}]}`, `request body is not valid JSON: lone surrogate \udead at offset 25`},
		{"too deep", "chat", deep, "request body is nested deeper than 256 levels at offset 260"},
		{"duplicate top-level key", "chat", `{"model":"a","model":"b"}`, `request body has duplicate key "model" at offset 13`},
		{"duplicate excluded key", "chat", `{"model":"a","stream":true,"stream":false}`, `request body has duplicate key "stream" at offset 27`},
		{"duplicate nested key", "chat", `{"messages":[{"role":"user","role":"system"}]}`, `request body has duplicate key "role" at offset 28`},
		{"duplicate dropped marker", "messages", `{"system":[{"text":"x","cache_control":{},"cache_control":{}}]}`, `request body has duplicate key "cache_control" at offset 42`},
		{"model number", "chat", `{"model":4}`, `"model" must be a string`},
		{"model null", "chat", `{"model":null}`, `"model" must be a string`},
		{"model object", "chat", `{"model":{"name":"m"}}`, `"model" must be a string`},
		{"model malformed", "chat", `{"model":[1,}`, "request body is not valid JSON: unexpected character '}' looking for a value at offset 12"},
		{"model mistyped and body malformed later", "chat", `{"model":4,"messages":[}`, "request body is not valid JSON: unexpected character '}' looking for a value at offset 23"},
		{"model mistyped and duplicate key later", "chat", `{"model":4,"a":1,"a":2}`, `request body has duplicate key "a" at offset 17`},
		{"escaped model key", "chat", `{"m\u006fdel":4}`, `"model" must be a string`},
		{"stream string", "chat", `{"stream":"true"}`, `"stream" must be a boolean`},
		{"stream number", "chat", `{"stream":1}`, `"stream" must be a boolean`},
		{"unknown shape", "completions", `{}`, `unknown API shape "completions"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(Params{Shape: tc.shape}, []byte(tc.body))
			if err == nil {
				t.Fatalf("Compute = %+v, want error", r)
			}
			if code := groundhog.ErrorCode(err); code != groundhog.EINVALID {
				t.Errorf("code = %q, want %q", code, groundhog.EINVALID)
			}
			if msg := groundhog.ErrorMessage(err); msg != tc.msg {
				t.Errorf("message = %s\n          want %s", msg, tc.msg)
			}
		})
	}
}

// TestRuleTables proves each table entry does what its comment says: an
// excluded field never moves the hash, an included one always does.
func TestRuleTables(t *testing.T) {
	for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeEmbeddings, groundhog.ShapeMessages} {
		if len(excluded[shape]) == 0 || len(included[shape]) == 0 {
			t.Errorf("%s: missing include or exclude table", shape)
		}
		base := `{"model":"m","messages":[{"role":"user","content":"hi"}],"input":"hi"}`
		hash := func(body string) string {
			t.Helper()
			r, err := Compute(Params{Shape: shape, Tenant: "t"}, []byte(body))
			if err != nil {
				t.Fatalf("%s: %s: %v", shape, body, err)
			}
			return r.Hash
		}
		withField := func(name, value string) string {
			// Replaces the field when base has it, adds it otherwise.
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(base), &m); err != nil {
				t.Fatal(err)
			}
			m[name] = json.RawMessage(value)
			b, _ := json.Marshal(m)
			return string(b)
		}
		h0 := hash(base)
		excludedTop := map[string]bool{}
		for _, f := range excluded[shape] {
			if f.Why == "" {
				t.Errorf("%s: excluded %s has no reason", shape, f.Path)
			}
			if strings.ContainsAny(f.Path, ".[") {
				continue // nested markers: covered by the golden files
			}
			excludedTop[f.Path] = true
			for _, v := range []string{`true`, `"x"`, `{"a":1}`, `[1,2]`, `null`} {
				if f.Path == "stream" && (v == `"x"` || v == `{"a":1}` || v == `[1,2]`) {
					continue // must be a boolean
				}
				if h := hash(withField(f.Path, v)); h != h0 {
					t.Errorf("%s: excluded %s=%s changed the hash", shape, f.Path, v)
				}
			}
		}
		for _, f := range included[shape] {
			if f.Why == "" {
				t.Errorf("%s: included %s has no reason", shape, f.Path)
			}
			if excludedTop[f.Path] {
				t.Errorf("%s: %s is both included and excluded", shape, f.Path)
			}
			a, b := hash(withField(f.Path, `"variant-a"`)), hash(withField(f.Path, `"variant-b"`))
			if a == b || a == h0 || b == h0 {
				t.Errorf("%s: included %s does not move the hash", shape, f.Path)
			}
		}
	}
}

func TestCompileRejectsBadRules(t *testing.T) {
	for _, fs := range [][]field{
		{{"", "empty"}},
		{{"a..b", "empty segment"}},
		{{"a[*]", "array element"}},
		{{"a[1].b", "index"}},
		{{"a", "x"}, {"a.b", "below an excluded path"}},
		{{"a.b", "x"}, {"a", "above another rule"}},
		{{"a", "x"}, {"a", "twice"}},
	} {
		if _, err := compile(fs); err == nil {
			t.Errorf("compile(%v) succeeded", fs)
		}
	}
	if _, err := compile([]field{{"a[*][*].b", "nested arrays"}, {"a[*][*].c", "siblings"}}); err != nil {
		t.Errorf("compile: %v", err)
	}
}

func TestComputeConcurrentAndPooled(t *testing.T) {
	// Pooled scanners must not leak state between calls: a huge body, an
	// erroring body and small ones interleaved from many goroutines give
	// the same answers as sequential calls.
	bodies := [][]byte{
		body200KB,
		[]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`),
		[]byte(`{"model":"m","stream":true,"messages":[{"content":"x","role":"user"}]}`),
		[]byte(`{"model":"m","messages":[`),
		body1KB,
	}
	type answer struct {
		r   Result
		err string
	}
	compute := func(b []byte) answer {
		r, err := Compute(Params{Shape: groundhog.ShapeChat, Tenant: "t"}, b)
		return answer{r, fmt.Sprint(err)}
	}
	want := make([]answer, len(bodies))
	for i, b := range bodies {
		want[i] = compute(b)
	}
	if want[1].r.Hash != want[2].r.Hash {
		t.Fatal("stream/key order changed the hash")
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				k := (g + i) % len(bodies)
				if got := compute(bodies[k]); got != want[k] {
					errs <- fmt.Sprintf("body %d: got %+v, want %+v", k, got, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestComputeDoesNotModifyBody(t *testing.T) {
	body := []byte(`{"stream":true,"model":"m","b":"\u00e9","a":[1.0]}`)
	orig := append([]byte(nil), body...)
	if _, err := Compute(Params{Shape: groundhog.ShapeChat}, body); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, orig) {
		t.Errorf("body changed to %s", body)
	}
}
