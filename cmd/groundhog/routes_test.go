package main

import (
	"net/http/httptest"
	"testing"
)

func TestMetricsAllowed(t *testing.T) {
	for _, c := range []struct {
		remote, auth, token string
		want                bool
	}{
		{"127.0.0.1:5000", "", "", true},
		{"[::1]:5000", "", "", true},
		{"10.1.2.3:5000", "", "", false},
		{"10.1.2.3:5000", "Bearer s3cret", "", false}, // no token configured: loopback only
		{"10.1.2.3:5000", "Bearer s3cret", "s3cret", true},
		{"10.1.2.3:5000", "bearer s3cret", "s3cret", true},
		{"10.1.2.3:5000", "Bearer wrong", "s3cret", false},
		{"10.1.2.3:5000", "Basic s3cret", "s3cret", false},
		{"127.0.0.1:5000", "Bearer wrong", "s3cret", true}, // loopback stays allowed
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = c.remote
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if got := metricsAllowed(r, c.token); got != c.want {
			t.Errorf("remote %s auth %q token %q: allowed=%v, want %v", c.remote, c.auth, c.token, got, c.want)
		}
	}
}
