package gateway

import (
	"net/http"
	"strings"
)

// Upstream response headers that reach the client: the
// back-off and rate-limit headers SDKs act on, and the provider's request id
// and processing time that support asks for. Every other upstream header is
// dropped — hop-by-hop ones included — since the gateway writes its own
// framing (Content-Length, Content-Type, Transfer-Encoding).
//
// They pass only on a live answer, to the client whose call the provider
// served (the flight's leader). A cache hit, a replay and a coalesced
// follower get none of them: their call spent none of the provider's rate
// limit, and a stored or borrowed Retry-After, x-ratelimit-* or request id
// would describe another call at another time.
func passUpstreamHeader(name string) bool {
	k := strings.ToLower(name)
	switch k {
	case "retry-after", "retry-after-ms", "x-request-id", "request-id", "openai-processing-ms",
		"x-amzn-requestid", "x-amzn-errortype":
		return true
	}
	return strings.HasPrefix(k, "x-ratelimit-") || strings.HasPrefix(k, "anthropic-ratelimit-")
}

// upstreamHeaders returns the subset of an upstream response's headers
// that pass to the client.
func upstreamHeaders(h http.Header) http.Header {
	var out http.Header
	for k, vs := range h {
		if passUpstreamHeader(k) {
			if out == nil {
				out = make(http.Header)
			}
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// setUpstreamHeaders copies the live upstream headers of c's flight into h
// when this call is the one the provider served. Not inlined: its map
// iterator would add a hundred bytes to the frame a follower waits under
// (deliver).
//
//go:noinline
func setUpstreamHeaders(h http.Header, c *call, leader bool) {
	if !leader || c.recheckHit.Load() {
		return
	}
	for k, vs := range c.upHeader {
		h[k] = vs
	}
}

// clearUpstreamHeaders removes every passed-through upstream header from h
// (an answer replaced by another call's committed result).
func clearUpstreamHeaders(h http.Header) {
	for k := range h {
		if passUpstreamHeader(k) {
			delete(h, k)
		}
	}
}
