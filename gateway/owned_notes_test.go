package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A body found naming no resource is remembered so with its exact bytes
// (the fingerprint memo's notes), and sent again skips the search; nothing
// else does. The same bytes sent many times by a tenant who does not own
// the file they name are refused every time, and a body of the same length
// that differs from a noted one by the one byte that makes a file reference
// is checked and refused, however often the noted one was sent.
func TestOwnedRefsNotedOnlyForExactBytes(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	mine := uploadFile(t, ownedOpenAI(h, acmeKey), "acme.pdf", "acme's report")
	pad := strings.Repeat("lorem ipsum ", 200) // above the memo's 1 KB minimum
	body := func(member string) string {
		return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"` + pad +
			`"},{"type":"file","file":{"` + member + `":"` + mine.ID + `"}}]}]}`
	}
	plain, naming := body("file_xd"), body("file_id") // same length, one byte apart
	if len(plain) != len(naming) {
		t.Fatal("the two bodies must have the same length")
	}
	// refused reports whether the gateway answered the call itself with its
	// not-found error (the provider was not asked).
	refused := func(key, b string) bool {
		req, _ := http.NewRequest("POST", h.URL+"/v1/chat/completions", strings.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusNotFound && strings.Contains(string(out), "No such File object: "+mine.ID)
	}
	for i := range 4 {
		n := len(f.requests())
		if refused(globexKey, plain) {
			t.Fatalf("sight %d of a body naming no resource: refused", i+1)
		}
		if len(f.requests()) == n {
			t.Fatalf("sight %d of a body naming no resource did not reach the provider", i+1)
		}
	}
	for i := range 4 {
		n := len(f.requests())
		if !refused(globexKey, naming) {
			t.Fatalf("sight %d of a body naming another tenant's file: not refused", i+1)
		}
		assertUntouched(t, f, n, "a body naming another tenant's file")
		if refused(globexKey, plain) {
			t.Fatalf("the noted body after the naming one: refused")
		}
	}
	n := len(f.requests())
	for i := range 3 {
		if refused(acmeKey, naming) {
			t.Fatalf("sight %d of the owner's own file: refused", i+1)
		}
	}
	if len(f.requests()) != n+3 {
		t.Fatalf("the owner's three calls on its file: %d reached the provider", len(f.requests())-n)
	}
}
