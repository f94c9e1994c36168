package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// funcRT is a RoundTripper made of a function (RoundTrippers outside the
// contract: nil responses, nil bodies).
type funcRT func(*http.Request) (*http.Response, error)

func (f funcRT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// roundTrip against s.client.Do, which it replaces on the upstream call:
// for answers of every kind (bodies, no body, each redirect status with a
// good, a bad and no Location, errors), transport failures (refused dial,
// a connection closed without an answer, the context's deadline, a URL
// with a user name), and RoundTrippers outside the contract, the caller
// sees the same thing — status, headers, body, or the same error text and
// *url.Error — and the upstream the same request. With roundTrip's
// Location check removed, or its errors left unwrapped, it fails.
func TestRoundTripMatchesClientDo(t *testing.T) {
	var mu sync.Mutex
	var seen []string // what the upstream received, one line per request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var hs []string
		for k, v := range r.Header {
			hs = append(hs, k+"="+strings.Join(v, ","))
		}
		sort.Strings(hs)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s %q", r.Method, r.URL.RequestURI(), strings.Join(hs, ";"), b))
		mu.Unlock()
		q := r.URL.Query()
		switch p := r.URL.Path; {
		case p == "/close":
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
			return
		case p == "/slow":
			<-r.Context().Done()
			return
		case strings.HasPrefix(p, "/status/"):
			var code int
			fmt.Sscan(strings.TrimPrefix(p, "/status/"), &code)
			if loc := q.Get("loc"); loc != "" {
				w.Header().Set("Location", loc)
			}
			w.Header().Set("X-Up", "1")
			w.WriteHeader(code)
			if code != 204 && code != 304 {
				_, _ = w.Write([]byte(`{"status":` + fmt.Sprint(code) + `}`))
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer up.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	newServer := func(rt http.RoundTripper) *Server {
		return &Server{client: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}}
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	real := newServer(tr)
	userURL := strings.Replace(up.URL, "http://", "http://alice:secret@", 1)
	type tcase struct {
		name    string
		s       *Server
		url     string
		timeout time.Duration
	}
	var cases []tcase
	for _, p := range []string{"/v1/chat/completions", "/status/204", "/status/500", "/status/429", "/status/304", "/close"} {
		cases = append(cases, tcase{p, real, up.URL + p, 0})
	}
	for _, code := range []int{300, 301, 302, 303, 307, 308} {
		for _, loc := range []string{"", "/elsewhere", "http://other.example/x", "http://[::1", "%zz", "://x"} {
			u := fmt.Sprintf("%s/status/%d", up.URL, code)
			if loc != "" {
				u += "?loc=" + url.QueryEscape(loc)
			}
			cases = append(cases, tcase{fmt.Sprintf("%d %q", code, loc), real, u, 0})
		}
	}
	cases = append(cases,
		tcase{"refused", real, deadURL + "/v1/chat/completions", 0},
		tcase{"deadline", real, up.URL + "/slow", 50 * time.Millisecond},
		tcase{"user in URL", real, userURL + "/v1/chat/completions", 0},
		tcase{"nil response", newServer(funcRT(func(r *http.Request) (*http.Response, error) { r.Body.Close(); return nil, nil })), up.URL, 0},
		tcase{"nil body", newServer(funcRT(func(r *http.Request) (*http.Response, error) {
			r.Body.Close()
			return &http.Response{StatusCode: 200, Header: http.Header{"A": {"b"}}}, nil
		})), up.URL, 0},
		tcase{"nil body with a length", newServer(funcRT(func(r *http.Request) (*http.Response, error) {
			r.Body.Close()
			return &http.Response{StatusCode: 200, ContentLength: 5, Header: http.Header{}}, nil
		})), up.URL, 0},
		tcase{"transport error", newServer(funcRT(func(r *http.Request) (*http.Response, error) {
			r.Body.Close()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("boom")}
		})), up.URL, 0},
	)
	outcome := func(res *http.Response, err error) string {
		if err != nil {
			var ue *url.Error
			if !errors.As(err, &ue) {
				return fmt.Sprintf("error %T %v", err, err)
			}
			var op *net.OpError
			return fmt.Sprintf("url.Error{%s %s} %v deadline=%v dial=%v", ue.Op, ue.URL, err,
				errors.Is(err, context.DeadlineExceeded), errors.As(err, &op) && op.Op == "dial")
		}
		defer res.Body.Close()
		b, rerr := io.ReadAll(res.Body)
		h := res.Header.Clone()
		h.Del("Date")
		var hs []string
		for k, v := range h {
			hs = append(hs, k+"="+strings.Join(v, ","))
		}
		sort.Strings(hs)
		return fmt.Sprintf("%d %s %q %v", res.StatusCode, strings.Join(hs, ";"), b, rerr)
	}
	for _, tc := range cases {
		var got [2]string
		var upSaw [2][]string
		for k := range 2 {
			body := []byte(`{"model":"m","messages":[]}`)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Client", "c")
			mu.Lock()
			seen = nil
			mu.Unlock()
			if k == 0 {
				got[k] = outcome(tc.s.client.Do(req))
			} else {
				got[k] = outcome(tc.s.roundTrip(req))
			}
			mu.Lock()
			upSaw[k] = append([]string(nil), seen...)
			mu.Unlock()
		}
		if got[0] != got[1] {
			t.Errorf("%s:\nClient.Do  %s\nroundTrip  %s", tc.name, got[0], got[1])
		}
		if fmt.Sprint(upSaw[0]) != fmt.Sprint(upSaw[1]) {
			t.Errorf("%s: the upstream saw\nClient.Do  %q\nroundTrip  %q", tc.name, upSaw[0], upSaw[1])
		}
	}
}
