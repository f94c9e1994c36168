package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The floor server answers every request with the stored bytes and
// Content-Type, whatever the body, after reading the body in full.
func TestFloorHandlerAnswersStoredResponse(t *testing.T) {
	stored := []byte("data: {\"x\":1}\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(floorHandler(stored, "text/event-stream"))
	defer srv.Close()
	for _, body := range []string{"", `{"model":"m"}`, strings.Repeat("x", 300<<10)} {
		res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(got) != string(stored) || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("body of %d bytes: status %d, type %q, answer %q", len(body), res.StatusCode, res.Header.Get("Content-Type"), got)
		}
	}
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("healthz: %d", res.StatusCode)
	}
}
