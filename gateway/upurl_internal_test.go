package gateway

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"
)

// newPost gives the request http.NewRequestWithContext(ctx, POST, url, body)
// gives, for every URL (valid or not, first call or remembered, more URLs
// than the cache keeps) and body kind: same error text, same fields, same
// GetBody bytes, the same bytes written on the wire. Each request's URL is
// scribbled on after the comparison: a remembered URL must not change with
// it (without newPost's copy, the next call for that URL gets the
// scribbled path and host).
func TestNewPostMatchesNewRequest(t *testing.T) {
	upURLs.m.Store(nil)
	t.Cleanup(func() { upURLs.m.Store(nil) })
	rng := rand.New(rand.NewPCG(12, 3))
	schemes := []string{"http://", "https://", "HTTP://", "ftp://", "", "http:", "//"}
	hosts := []string{"example.com", "127.0.0.1:8080", "[::1]:9", "host:", "[::1]:", "user:pw@host:81", "u@h",
		"h%41st", "[::1", "EXAMPLE.com:443", "a b", "xn--bcher-kva.example", "host:port", "", "bücher.example"}
	bases := []string{"", "/", "/v1", "/openai/v1/", "/a%2Fb", "/%zz", "/sp ace", "/ü", "/v1;x=1", "/v1?x=1", "/v1#f", "/../x"}
	routes := []string{"/chat/completions", "/messages", "/responses", "", "/embeddings?x=%20", "/a%2f%41"}
	var urls []string
	for range 300 {
		u := schemes[rng.IntN(len(schemes))] + hosts[rng.IntN(len(hosts))] + bases[rng.IntN(len(bases))] + routes[rng.IntN(len(routes))]
		urls = append(urls, u)
	}
	bodyOf := func(kind int, b []byte) io.Reader {
		switch kind {
		case 0:
			return bytes.NewReader(b)
		case 1:
			return newRefReader(b, &bodyRefs{})
		default:
			return io.NopCloser(bytes.NewReader(b))
		}
	}
	ctx := context.WithValue(context.Background(), struct{}{}, 1)
	var cached, failed int
	for round := range 3 {
		for _, raw := range urls {
			kind := rng.IntN(3)
			body := make([]byte, rng.IntN(3)*rng.IntN(200))
			for j := range body {
				body[j] = byte('a' + rng.IntN(26))
			}
			if upURLs.get(raw) != nil {
				cached++
			}
			want, werr := http.NewRequestWithContext(ctx, http.MethodPost, raw, bodyOf(kind, body))
			got, gerr := newPost(ctx, raw, bodyOf(kind, body))
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("round %d %q: error %v, want %v", round, raw, gerr, werr)
			}
			if werr != nil {
				failed++
				continue
			}
			if !reflect.DeepEqual(got.URL, want.URL) || got.Host != want.Host || got.Method != want.Method ||
				got.Proto != want.Proto || got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor ||
				!reflect.DeepEqual(got.Header, want.Header) || got.ContentLength != want.ContentLength ||
				(got.GetBody == nil) != (want.GetBody == nil) || (got.Body == http.NoBody) != (want.Body == http.NoBody) ||
				reflect.TypeOf(got.Body) != reflect.TypeOf(want.Body) || got.Context() != want.Context() {
				t.Fatalf("round %d %q: request %+v (URL %#v), want %+v (URL %#v)", round, raw, got, got.URL, want, want.URL)
			}
			if got.GetBody != nil {
				gb, _ := got.GetBody()
				wb, _ := want.GetBody()
				g, _ := io.ReadAll(gb)
				w, _ := io.ReadAll(wb)
				if !bytes.Equal(g, w) {
					t.Fatalf("%q: GetBody %q, want %q", raw, g, w)
				}
			}
			got.Header.Set("User-Agent", "t")
			want.Header.Set("User-Agent", "t")
			var gw, ww bytes.Buffer
			gwe, wwe := got.Write(&gw), want.Write(&ww)
			if (gwe == nil) != (wwe == nil) || !bytes.Equal(gw.Bytes(), ww.Bytes()) {
				t.Fatalf("round %d %q (body kind %d): wrote %q (%v), want %q (%v)", round, raw, kind, gw.Bytes(), gwe, ww.Bytes(), wwe)
			}
			got.URL.Path += "/scribbled"
			got.URL.Host = "scribbled.example"
			got.URL.RawQuery = "s=1"

		}
	}
	if cached < 100 || failed == 0 {
		t.Fatalf("cached %d, failed %d: the inputs do not reach both ways", cached, failed)
	}
	t.Logf("%d URLs × 3 rounds: %d calls from a remembered URL, %d parse errors", len(urls), cached, failed)
	if n := len(*upURLs.m.Load()); n > maxUpURLs {
		t.Fatalf("cache holds %d URLs, bound %d", n, maxUpURLs)
	}

}

func BenchmarkNewPost(b *testing.B) {
	const raw = "http://127.0.0.1:43567/v1/chat/completions"
	body := []byte(`{"model":"m"}`)
	ctx := context.Background()
	b.Run("NewRequestWithContext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
		}
	})
	b.Run("newPost", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = newPost(ctx, raw, bytes.NewReader(body))
		}
	})
}
