package gateway

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// roundTrip is s.client.Do(req) for an upstream call, without the
// http.Client layer: Client.Do clones the request's headers for redirects
// it never follows here (CheckRedirect answers ErrUseLastResponse), checks
// a deadline the client does not have, and wraps errors. The bare
// httputil.ReverseProxy calls its Transport the same way; the client layer
// was ≈ 2 % of the gateway's CPU per 1 KB miss (docs/design/0010-miss-path.md).
//
// Same outcome as Client.Do for every response and error, pinned by
// TestRoundTripMatchesClientDo: errors wrapped in the same *url.Error
// ("Post", the URL), a redirect returned as is, except the one Client.Do
// refuses (a Location it cannot parse: the same error, the body closed). A
// URL with a user name goes to Client.Do (it turns it into an
// Authorization header), and so does every call of a client given a
// Timeout or a cookie Jar, which only the client layer applies.
func (s *Server) roundTrip(req *http.Request) (*http.Response, error) {
	rt := s.client.Transport
	if rt == nil || s.client.Timeout != 0 || s.client.Jar != nil ||
		req.URL == nil || req.URL.User != nil || req.RequestURI != "" || req.Header == nil {
		return s.client.Do(req)
	}
	res, err := rt.RoundTrip(req)
	return s.roundTripped(req, rt, res, err)
}

// roundTripped is roundTrip's outcome of rt's answer: a function of its
// own, since a flight waits for the provider's head under roundTrip's
// frame (design record 0021).
func (s *Server) roundTripped(req *http.Request, rt http.RoundTripper, res *http.Response, err error) (*http.Response, error) {
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	if res == nil || res.Body == nil {
		// A RoundTripper outside the contract (tests): Client.Do's checks.
		return s.clientResult(res, req, rt)
	}
	switch res.StatusCode {
	case 301, 302, 303, 307, 308:
		if loc := res.Header.Get("Location"); loc != "" {
			if _, err := req.URL.Parse(loc); err != nil {
				res.Body.Close()
				return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(),
					Err: fmt.Errorf("failed to parse Location header %q: %v", loc, err)}
			}
		}
	}
	return res, nil
}

// clientResult is what Client.Do returns for a RoundTripper's nil response
// or nil body (net/http's send).
func (s *Server) clientResult(res *http.Response, req *http.Request, rt http.RoundTripper) (*http.Response, error) {
	if res == nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(),
			Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)}
	}
	if res.ContentLength > 0 && req.Method != http.MethodHead {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(),
			Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", rt, res.ContentLength)}
	}
	res.Body = io.NopCloser(strings.NewReader(""))
	return res, nil
}

// urlErrorOp is net/http's: the method's first letter upper case, the rest
// lower case ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lowerMethod, ok := asciiLower(method); ok {
		return method[:1] + lowerMethod[1:]
	}
	return method
}

func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		if c >= 0x80 {
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), true
}
