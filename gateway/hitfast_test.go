package gateway

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

// The strings of the table are those of the formatting they stand for, for
// every value, with values that share a slot replacing each other under
// concurrent use.
func TestStrCache(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 20000 {
				n := r.IntN(1 << 20)
				if got, want := lengthFor("hit", n), strconv.Itoa(n); got != want {
					t.Errorf("lengthFor(hit, %d) = %q, want %q", n, got, want)
					return
				}
				m := groundhog.Money(r.Int64N(1 << 40))
				if r.IntN(8) == 0 {
					m = groundhog.CostUnknown
				}
				cost := m
				if r.IntN(8) == 0 {
					cost = groundhog.CostUnknown // the stored answer's price unknown
				}
				resp := &groundhog.Response{Cost: cost}
				if got, want := savedHeaderFor("hit", groundhog.OutcomeCacheHit, m, resp), savedHeader(groundhog.OutcomeCacheHit, m, resp); got != want {
					t.Errorf("savedHeaderFor(hit, %d, cost %d) = %q, want %q", m, cost, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	// A repeated value is served from the table: no allocation.
	resp := &groundhog.Response{Cost: 4000}
	hit := func() {
		lengthFor("hit", 1775)
		savedHeaderFor("hit", groundhog.OutcomeCacheHit, 4000, resp)
	}
	hit()
	if a := testing.AllocsPerRun(100, hit); a != 0 {
		t.Errorf("repeated hit strings: %v allocations, want 0", a)
	}
}

// containsEmptyChoices is bytes.Contains for the usage chunk's member, on
// chunks and on bytes built to trip a search from the bracket.
func TestContainsEmptyChoices(t *testing.T) {
	pat := []byte(emptyChoices)
	cases := [][]byte{
		nil, []byte("]"), []byte(`"choices":[`), pat, []byte("x" + emptyChoices), []byte(emptyChoices + "x"),
		[]byte(`{"choices":[{"delta":{"content":"]]]"}}],"usage":null}`),
		[]byte(`{"id":"c","choices":[],"usage":{"prompt_tokens":3}}`),
		[]byte(`]]"choices":[]]`), []byte(`"choices":[ ]`), []byte(`"choices":[]`[1:]),
	}
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []byte(`"choices:[]{} x`)
	for range 50000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if r.IntN(4) == 0 {
			at := r.IntN(len(b) + 1)
			b = append(b[:at:at], append(append([]byte{}, pat...), b[at:]...)...)
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		if got, want := containsEmptyChoices(b), bytes.Contains(b, pat); got != want {
			t.Fatalf("containsEmptyChoices(%q) = %v, bytes.Contains = %v", b, got, want)
		}
	}
}

func newRouteServer(t *testing.T, extra func(*http.ServeMux)) *Server {
	t.Helper()
	cfg := config.Default()
	return New(Options{Config: &cfg, Extra: func(m *http.ServeMux, _ func(*http.Request) (string, error)) {
		if extra != nil {
			extra(m)
		}
	}})
}

// The provider routes are dispatched without the mux, to the handler the
// mux picks for them; every other request, and a provider path the mux
// would route elsewhere for some method, goes through the mux.
func TestDirectRoutes(t *testing.T) {
	s := newRouteServer(t, func(m *http.ServeMux) {
		m.HandleFunc("POST /v1/messages", func(http.ResponseWriter, *http.Request) {}) // more specific: keeps the mux
	})
	for i, p := range providerPaths {
		if want := p != "/v1/messages"; (s.direct[i] != nil) != want {
			t.Errorf("%s dispatched directly: %v, want %v", p, s.direct[i] != nil, want)
		}
	}
	targets := []string{
		"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages",
		"/v1/chat%2Fcompletions", "/v1/chat/completions/", "/v1//chat/completions", "/v1/./chat/completions",
		"/v1/chat/completions?x=1", "/v1/models", "/v1/other", "/healthz", "/", "/V1/chat/completions",
		"/v1/%63hat/completions",
	}
	for _, target := range targets {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			r := httptest.NewRequest(method, "http://gw"+target, strings.NewReader("{}"))
			h := s.route(r)
			_, pattern := s.mux.Handler(r)
			if h == http.Handler(s.mux) {
				continue // the mux decides, as before
			}
			if pattern != r.URL.Path || r.Pattern != pattern {
				t.Errorf("%s %s: dispatched directly (Pattern %q), the mux picks %q", method, target, r.Pattern, pattern)
			}
			mh, _ := s.mux.Handler(r)
			if fmt.Sprint(mh) != fmt.Sprint(h) {
				t.Errorf("%s %s: direct handler %v, the mux's %v", method, target, h, mh)
			}
		}
	}
	// An exact provider path is served without the mux.
	r := httptest.NewRequest(http.MethodPost, "http://gw/v1/chat/completions", strings.NewReader("{}"))
	if s.route(r) == http.Handler(s.mux) {
		t.Error("/v1/chat/completions goes through the mux")
	}
}
