package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestPprofRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "example.com:6060"} {
		if stop, err := startPprof(addr); err == nil {
			stop()
			t.Errorf("startPprof(%q) accepted a non-loopback address", addr)
		}
	}
}

func TestPprofServesOnLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err := startPprof(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "goroutine profile") {
		t.Fatalf("status %d, body %.100q", res.StatusCode, b)
	}
}
