package gateway_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A relayed stream delivers each event before the upstream sends the next:
// the relay flushes whenever it would wait (it only batches events that are
// already there). The upstream here sends one event, then waits until the
// client has read it before sending the next; a relay that kept an event
// buffered while waiting would never see the next one.
func TestRelayDeliversEachEventBeforeTheNext(t *testing.T) {
	read := make(chan int)
	upDone := make(chan struct{})
	const n = 5
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upDone)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			finish := "null"
			if i == n-1 {
				finish = `"stop"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"sim-small\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part%d\"},\"finish_reason\":%s}]}\n\n", i, finish)
			w.(http.Flusher).Flush()
			select {
			case got := <-read:
				if got != i {
					t.Errorf("client read part %d, upstream sent part %d", got, i)
				}
			case <-time.After(30 * time.Second): // liveness bound, not a timing figure
				t.Errorf("part %d never reached the client while the upstream waited", i)
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	body := `{"model":"sim-small","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"step by step"}]}`
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	next := 0
	for sc.Scan() {
		line := sc.Text()
		if next < n && strings.Contains(line, fmt.Sprintf("part%d", next)) {
			select {
			case read <- next:
			case <-upDone: // the upstream gave up waiting for this part
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("the client read %d of %d parts", next, n)
	}
}
