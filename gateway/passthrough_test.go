package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/pricing"
)

// The official Anthropic SDK's count_tokens goes through the gateway to the
// sim and comes back with the sim's own count; the call is ledgered as
// passthrough with no cost.
func TestPassthroughAnthropicCountTokens(t *testing.T) {
	h := newHarness(t)
	client := anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey("unused"))
	params := anthropic.MessageCountTokensParams{
		Model:    "sim-small",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count these five words please"))},
	}
	got, err := client.Messages.CountTokens(context.Background(), params)
	if err != nil {
		t.Fatalf("CountTokens through the gateway: %v", err)
	}
	direct := anthropic.NewClient(aoption.WithBaseURL(h.SimURL), aoption.WithAPIKey("unused"))
	want, err := direct.Messages.CountTokens(context.Background(), params)
	if err != nil {
		t.Fatalf("CountTokens at the sim: %v", err)
	}
	if got.InputTokens == 0 || got.InputTokens != want.InputTokens {
		t.Fatalf("input_tokens through the gateway %d, at the sim %d", got.InputTokens, want.InputTokens)
	}
	rows := h.ledgerRows()
	if len(rows) != 1 {
		t.Fatalf("%d ledger rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Outcome != groundhog.OutcomePassthrough || r.Status != 200 || r.Operation != "passthrough" || r.Cost != 0 || !strings.HasPrefix(r.RequestHash, "sha256:") {
		t.Fatalf("ledger row %+v", r)
	}
	if h.bill().Calls != 0 {
		t.Fatalf("count_tokens was billed as a model call")
	}
}

// The official OpenAI SDK uploads, lists, retrieves and deletes a file
// through the gateway; a 50 MB upload arrives at the provider byte for byte.
func TestPassthroughOpenAIFiles(t *testing.T) {
	h := newHarness(t)
	client := openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey("unused"))
	ctx := context.Background()
	data := bytes.Repeat([]byte("groundhog passthrough 0123456789\n"), 50<<20/33)
	sum := sha256.Sum256(data)
	f, err := client.Files.New(ctx, openai.FileNewParams{
		File:    openai.File(bytes.NewReader(data), "big.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if f.Bytes != int64(len(data)) || f.Filename != "big.jsonl" {
		t.Fatalf("uploaded file %+v, want %d bytes", f, len(data))
	}
	if got := f.JSON.ExtraFields["sha256"].Raw(); got != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("the provider received bytes with sha256 %s", got)
	}
	got, err := client.Files.Get(ctx, f.ID)
	if err != nil || got.ID != f.ID || got.Bytes != f.Bytes {
		t.Fatalf("retrieve: %+v, %v", got, err)
	}
	page, err := client.Files.List(ctx, openai.FileListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.ID {
		t.Fatalf("list: %+v, %v", page, err)
	}
	del, err := client.Files.Delete(ctx, f.ID)
	if err != nil || !del.Deleted {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	if _, err := client.Files.Get(ctx, f.ID); err == nil {
		t.Fatalf("a deleted file is still there")
	}
	rows := h.ledgerRows()
	if len(rows) != 5 {
		t.Fatalf("%d ledger rows, want 5 (upload, get, list, delete, get)", len(rows))
	}
	for _, r := range rows {
		if r.Outcome != groundhog.OutcomePassthrough {
			t.Fatalf("row outcome %q, want passthrough", r.Outcome)
		}
	}
	if rows[4].Status != http.StatusNotFound {
		t.Fatalf("the last get's row has status %d, want 404", rows[4].Status)
	}
}

// A passthrough body is streamed both ways: the provider receives the first
// megabyte of an upload before the client has sent the second, and the
// client receives the first megabyte of a download before the provider has
// written the second. A gateway that buffered either way would deadlock here.
func TestPassthroughStreamsBothWays(t *testing.T) {
	gotFirst := make(chan struct{})
	sentFirst := make(chan struct{})
	const mb = 1 << 20
	var upstreamKey atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamKey.Store(r.Header.Get("Authorization"))
		if r.Method == http.MethodPost {
			if _, err := io.ReadFull(r.Body, make([]byte, mb)); err != nil {
				t.Errorf("upstream read: %v", err)
				return
			}
			close(gotFirst)
			n, _ := io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"received":`+strconv.FormatInt(n+mb, 10)+`}`)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(make([]byte, mb))
		http.NewResponseController(w).Flush()
		select {
		case <-sentFirst:
		case <-time.After(30 * time.Second): // the test has failed by then; do not hang the server
		}
		_, _ = w.Write(make([]byte, mb))
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"))

	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, mb))
		select {
		case <-gotFirst:
		case <-time.After(30 * time.Second):
			pw.CloseWithError(io.ErrUnexpectedEOF)
			return
		}
		_, _ = pw.Write(make([]byte, mb))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/audio/transcriptions", pr)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer gateway-key")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != `{"received":2097152}` {
		t.Fatalf("upload answer %q", body)
	}
	if k := upstreamKey.Load(); k != "Bearer sk-provider" {
		t.Fatalf("upstream got Authorization %q, want the provider key only", k)
	}

	res, err = http.Get(h.URL + "/v1/audio/speech/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, mb)); err != nil {
		t.Fatalf("first megabyte: %v", err)
	}
	close(sentFirst)
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if n != mb {
		t.Fatalf("second part %d bytes", n)
	}
	rows := h.ledgerRows()
	if len(rows) != 2 || rows[0].Cost != groundhog.CostUnknown {
		t.Fatalf("rows %+v: an audio route has no token usage, its cost must be unknown", rows)
	}
}

// Passthrough routes are authenticated like every route, and a path that
// tries to climb out of /v1 never reaches the provider.
func TestPassthroughAuthAndPaths(t *testing.T) {
	var reached atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"))
	secret, key := groundhog.NewAPIKey("acme", time.Now())
	if err := h.DB.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	do := func(method, path, auth string) int {
		req, _ := http.NewRequest(method, h.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 400 {
			errorType(t, b)
		}
		return res.StatusCode
	}
	if got := do("GET", "/v1/batches", ""); got != 401 {
		t.Fatalf("no key: %d, want 401", got)
	}
	if got := do("GET", "/v1/batches", "gh_wrong"); got != 401 {
		t.Fatalf("unknown key: %d, want 401", got)
	}
	if reached.Load() != 0 {
		t.Fatalf("an unauthenticated call reached the provider")
	}
	for _, p := range []string{"/v1/files/..%2F..%2Fadmin", "/v1/files/%2e%2e/x", "/v1/files/a%5Cb"} {
		if got := do("GET", p, secret); got != 404 && got != 400 {
			t.Fatalf("%s: %d, want 404", p, got)
		}
	}
	if reached.Load() != 0 {
		t.Fatalf("a path outside /v1 reached the provider")
	}
	if got := do("DELETE", "/v1/assistants/asst_123", secret); got != 200 {
		t.Fatalf("with the key: %d, want 200", got)
	}
	if reached.Load() != 1 {
		t.Fatalf("provider reached %d times, want 1", reached.Load())
	}
	rows := h.ledgerRows()
	if len(rows) != 1 || rows[0].Tenant != "acme" || rows[0].Outcome != groundhog.OutcomePassthrough {
		t.Fatalf("rows %+v", rows)
	}
}

// A multipart body built by hand, as a curl user would send it.
func TestPassthroughMultipartCurlStyle(t *testing.T) {
	h := newHarness(t)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "assistants")
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = fw.Write([]byte("hello files\n"))
	mw.Close()
	res, err := http.Post(h.URL+"/v1/files", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(b, []byte(`"bytes":12`)) {
		t.Fatalf("upload: %d %s", res.StatusCode, b)
	}
}

// TestBackgroundResponseBookedOnce: a background response's usage shows
// when it is read back after its work is done; a client that polls it, or
// resumes it as a stream, books that usage once, on the day the response
// was made, and a stored response that did not run in the background is
// free to read either way.
func TestBackgroundResponseBookedOnce(t *testing.T) {
	created := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bg := strings.HasSuffix(r.URL.Path, "resp_bg")
		resp := fmt.Sprintf(`{"id":%q,"object":"response","created_at":%d,"status":"completed","background":%t,"model":"gpt-4o-mini","output":[],"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":0},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1500}}`,
			path.Base(r.URL.Path), created.Unix(), bg)
		if r.URL.Query().Get("stream") == "true" {
			// Resumed as a stream: the response's events up to its end.
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":%s}\n\n", resp)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, resp)
	}))
	t.Cleanup(up.Close)
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"))
	for i := range 4 {
		for _, id := range []string{"resp_bg", "resp_fg"} {
			query := ""
			if i%2 == 1 {
				query = "?stream=true"
			}
			res, err := http.Get(h.URL + "/v1/responses/" + id + query)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", id, res.StatusCode)
			}
		}
	}
	want := pricing.Default().Cost("gpt-4o-mini", groundhog.Usage{InputTokens: 1200, OutputTokens: 300})
	// Eight reads and one booked run; a passthrough's row is written once
	// its answer is relayed.
	var rows []groundhog.LedgerEntry
	waitFor(t, func() bool { rows = h.ledgerRows(); return len(rows) >= 9 })
	var booked []groundhog.LedgerEntry
	for _, row := range rows {
		if row.Cost != 0 {
			booked = append(booked, row)
		}
	}
	if len(booked) != 1 || booked[0].Cost != want || !booked[0].Time.Equal(created) {
		t.Fatalf("booked rows %+v, want one of %s at %s", booked, want, created)
	}
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: created})
	if err != nil {
		t.Fatal(err)
	}
	if spend, ok := rep.Total.Spend.Money(); !ok || spend != want || rep.Total.UnknownCostCalls != 0 {
		t.Fatalf("the day's spend %s (%d unknown), want %s", rep.Total.Spend, rep.Total.UnknownCostCalls, want)
	}
}
