package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// chatPath is the chat completions route.
const chatPath = "/v1/chat/completions"

// holdStream sends a streaming call (body to url) with the given headers,
// reports on first when its first event arrived (nil) or why it did not,
// then reads the rest until ctx ends or the stream does: a client that holds
// its stream open, as one waiting for tokens does.
func holdStream(ctx context.Context, client *http.Client, url, body string, hdr map[string]string, first chan<- error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		first <- err
		return
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if res.Header.Get("Content-Type") == bedrock.ContentType {
		_, err := bedrock.NewReader(br).Next() // a Bedrock stream's first message
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		first <- err
	} else {
		line, err := br.ReadString('\n')
		if err == nil && (res.StatusCode != http.StatusOK || !strings.HasPrefix(line, "data: ")) {
			err = fmt.Errorf("status %d, first line %q", res.StatusCode, line)
		}
		first <- err
	}
	_, _ = io.Copy(io.Discard, br)
}

// awaitFirstEvents waits until n held streams have their first event,
// failing on the first that did not get one, or after timeout.
func awaitFirstEvents(tb testing.TB, first <-chan error, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.After(timeout)
	for range n {
		select {
		case err := <-first:
			if err != nil {
				tb.Fatalf("a stream's first event: %v", err)
			}
		case <-deadline:
			tb.Fatalf("not every stream received its first event in %v", timeout)
		}
	}
}

// benchStreams is GROUNDHOG_BENCH_STREAMS, or def.
func benchStreams(def int) int {
	if v, err := strconv.Atoi(os.Getenv("GROUNDHOG_BENCH_STREAMS")); err == nil && v > 0 {
		return v
	}
	return def
}
