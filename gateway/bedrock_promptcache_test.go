package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/fanout"
)

// converseLoop is the request of turn n (1-based) of an agent loop over
// system: n user turns, the assistant's answers between them, and a
// cachePoint after the user turns listed in points (the client's own).
func converseLoop(system string, n int, points ...int) *bedrockruntime.ConverseInput {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel),
		System: []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}}}
	for k := 1; k <= n; k++ {
		content := []types.ContentBlock{&types.ContentBlockMemberText{Value: fmt.Sprintf("Step %d: check shipment %d. ", k, k) + words(150, "step")}}
		for _, p := range points {
			if p == k {
				content = append(content, &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
			}
		}
		in.Messages = append(in.Messages, types.Message{Role: types.ConversationRoleUser, Content: content})
		if k < n {
			in.Messages = append(in.Messages, types.Message{Role: types.ConversationRoleAssistant,
				Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: fmt.Sprintf("Shipment %d is on its way. ", k) + words(100, "answer")}}})
		}
	}
	return in
}

// upstreamCachePoints returns a tap counting the cachePoint blocks of every
// Converse body the gateway sends upstream, and the channel it reports on.
func upstreamCachePoints() (func(*setup), chan int) {
	counts := make(chan int, 64)
	return func(s *setup) {
		s.tap = func(path string, body []byte) {
			if strings.HasPrefix(path, "/model/") {
				counts <- bytes.Count(body, []byte(`"cachePoint"`))
			}
		}
	}, counts
}

// A six-turn Converse agent loop whose client places no cachePoint: with
// breakpoint injection (by header, or by the operation's config) the
// gateway inserts cachePoint blocks — never more than four — and from turn
// 2 on the provider reads the prefix, as its usage and the
// Groundhog-Prompt-Cache header both say, with no break named; without
// injection nothing is read, and from turn 2 on the break is named
// no_breakpoint. The request hash of every turn is the same
// either way.
func TestBedrockConverseBreakpointInjection(t *testing.T) {
	type run struct {
		reads, writes []int64
		hashes        []string
		points        []int
		breaks        []string
	}
	loop := func(t *testing.T, hdr map[string]string, opts ...harnessOpt) run {
		tap, counts := upstreamCachePoints()
		h := newHarness(t, append([]harnessOpt{withBedrockPrices(), tap}, opts...)...)
		cl := bedrockClient(t, h, hdr)
		var r run
		for n := 1; n <= 6; n++ {
			out, err := cl.Converse(context.Background(), converseLoop(longSystem, n))
			if err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
			read, write := int64(aws.ToInt32(out.Usage.CacheReadInputTokens)), int64(aws.ToInt32(out.Usage.CacheWriteInputTokens))
			if got, want := responseHeader(out.ResultMetadata, "Groundhog-Prompt-Cache"), fmt.Sprintf("read=%d write=%d", read, write); got != want {
				t.Fatalf("turn %d: Groundhog-Prompt-Cache %q, want %q", n, got, want)
			}
			r.breaks = append(r.breaks, responseHeader(out.ResultMetadata, "Groundhog-Prompt-Cache-Break"))
			r.reads, r.writes = append(r.reads, read), append(r.writes, write)
			r.hashes = append(r.hashes, responseHeader(out.ResultMetadata, "Groundhog-Request-Hash"))
			r.points = append(r.points, <-counts)
		}
		return r
	}
	op := map[string]string{"Groundhog-Operation": "agent"}
	none := loop(t, op)
	header := loop(t, map[string]string{"Groundhog-Operation": "agent", "Groundhog-Prompt-Cache-Breakpoints": "auto"})
	conf := loop(t, op, withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{"agent": {PromptCache: config.OperationPromptCache{Breakpoints: "auto"}}}
	}))
	t.Logf("reads per turn: none %v, injected %v (writes %v), cachePoints sent %v", none.reads, header.reads, header.writes, header.points)
	for i := range 6 {
		if none.reads[i] != 0 || none.points[i] != 0 {
			t.Errorf("turn %d without injection: read %d, %d cachePoints sent", i+1, none.reads[i], none.points[i])
		}
		// Without a cachePoint nothing is stored, and the diagnosis says so.
		if want := map[bool]string{true: "", false: "no_breakpoint"}[i == 0]; none.breaks[i] != want {
			t.Errorf("turn %d without injection: break %q, want %q", i+1, none.breaks[i], want)
		}
		if header.breaks[i] != "" || conf.breaks[i] != "" {
			t.Errorf("turn %d with injection: break %q / %q", i+1, header.breaks[i], conf.breaks[i])
		}
		if header.points[i] < 1 || header.points[i] > 4 {
			t.Errorf("turn %d: %d cachePoints sent, want 1 to 4", i+1, header.points[i])
		}
		if i > 0 && header.reads[i] <= header.reads[i-1] {
			t.Errorf("turn %d read %d tokens, want more than turn %d's %d", i+1, header.reads[i], i, header.reads[i-1])
		}
		if header.hashes[i] == "" || header.hashes[i] != none.hashes[i] || conf.hashes[i] != none.hashes[i] {
			t.Errorf("turn %d: request hash %q without injection, %q / %q with", i+1, none.hashes[i], header.hashes[i], conf.hashes[i])
		}
		if conf.reads[i] != header.reads[i] {
			t.Errorf("turn %d: config breakpoints: auto read %d, the header %d", i+1, conf.reads[i], header.reads[i])
		}
	}
	if header.reads[1] < 1024 {
		t.Errorf("turn 2 read %d tokens, want the system prompt", header.reads[1])
	}
}

// The client's own cachePoints count against Bedrock's limit of four:
// with three, injection adds one (and the provider, which refuses a
// fifth, answers); with four it adds none. The request hash is the client
// body's.
func TestBedrockConverseInjectionLimit(t *testing.T) {
	tap, counts := upstreamCachePoints()
	h := newHarness(t, withBedrockPrices(), tap)
	inject := bedrockClient(t, h, map[string]string{"Groundhog-Prompt-Cache-Breakpoints": "auto"})
	plain := bedrockClient(t, h, map[string]string{"Groundhog-Prompt-Cache-Breakpoints": "off"})
	for _, tc := range []struct {
		points []int
		want   int
	}{{[]int{1, 2, 3}, 4}, {[]int{1, 2, 3, 4}, 4}} {
		in := converseLoop(longSystem, 5, tc.points...)
		out, err := inject.Converse(context.Background(), in)
		if err != nil {
			t.Fatalf("%d client cachePoints: %v", len(tc.points), err)
		}
		if got := <-counts; got != tc.want {
			t.Errorf("%d client cachePoints: %d sent upstream, want %d", len(tc.points), got, tc.want)
		}
		ref, err := plain.Converse(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-counts; got != len(tc.points) {
			t.Errorf("injection off: %d cachePoints sent, want the client's %d", got, len(tc.points))
		}
		if a, b := responseHeader(out.ResultMetadata, "Groundhog-Request-Hash"), responseHeader(ref.ResultMetadata, "Groundhog-Request-Hash"); a == "" || a != b {
			t.Errorf("request hash %q with injection, %q without", a, b)
		}
	}
}

// A timestamp at the start of the system prompt moves on every turn: the
// provider reads nothing of the prefix, and the gateway names the cause
// volatile_in_prefix in the Groundhog-Prompt-Cache-Break header and the
// ledger row.
func TestBedrockConverseVolatileBreak(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Prompt-Cache-Breakpoints": "auto", "Groundhog-Operation": "agent"})
	var last *bedrockruntime.ConverseOutput
	for n, ts := range []string{"2026-12-01T09:00:00Z", "2026-12-01T09:00:30Z"} {
		out, err := cl.Converse(context.Background(), converseLoop("Now: "+ts+". "+longSystem, n+1))
		if err != nil {
			t.Fatal(err)
		}
		last = out
	}
	if got := responseHeader(last.ResultMetadata, "Groundhog-Prompt-Cache-Break"); got != "volatile_in_prefix" {
		t.Fatalf("Groundhog-Prompt-Cache-Break %q, want volatile_in_prefix (read %d)", got, aws.ToInt32(last.Usage.CacheReadInputTokens))
	}
	var causes []string
	for _, r := range h.ledgerRows() {
		causes = append(causes, r.PromptCacheBreak)
	}
	if strings.Join(causes, ",") != ",volatile_in_prefix" {
		t.Fatalf("ledger causes %q", causes)
	}
}

// ConverseStream: the stage's verdict arrives as trailers after the
// eventstream, as on other streams; the second turn reads the prefix the
// injected cachePoints let the first write.
func TestBedrockConverseStreamPromptCacheTrailers(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	hdr := map[string]string{"Groundhog-Prompt-Cache-Breakpoints": "auto", "Authorization": "Bearer k"}
	var read int64
	for n := 1; n <= 2; n++ {
		in := converseLoop(longSystem, n)
		body := map[string]any{"system": []any{map[string]any{"text": longSystem}}}
		var msgs []any
		for _, m := range in.Messages {
			msgs = append(msgs, map[string]any{"role": string(m.Role), "content": []any{map[string]any{"text": m.Content[0].(*types.ContentBlockMemberText).Value}}})
		}
		body["messages"] = msgs
		b, _ := json.Marshal(body)
		res, _ := h.post("/model/"+bedrockModel+"/converse-stream", string(b), hdr)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("turn %d: status %d", n, res.StatusCode)
		}
		v := res.Trailer.Get("Groundhog-Prompt-Cache")
		var write int64
		if _, err := fmt.Sscanf(v, "read=%d write=%d", &read, &write); err != nil {
			t.Fatalf("turn %d: Groundhog-Prompt-Cache trailer %q", n, v)
		}
		if b := res.Trailer.Get("Groundhog-Prompt-Cache-Break"); b != "" {
			t.Fatalf("turn %d: break %q", n, b)
		}
	}
	if read < 1024 {
		t.Fatalf("turn 2 of the stream read %d tokens, want the system prompt", read)
	}
}

// Four Converse subagents start together over a 10,000-token system prompt
// with the client's cachePoint after it, which the provider has not
// cached: the gateway sends the first and holds the three others until it
// answers, so the prefix is written once and read three times.
func TestBedrockConverseFanOutWritesOnce(t *testing.T) {
	prefix := "You coordinate four shipping subagents. " + words(10000, "prefix")
	g := newGate()
	held := make(chan struct{}, 8)
	fan := fanout.New(fanout.Config{OnHold: func() { held <- struct{}{} }, PrewarmAfter: -1})
	h := newHarness(t, withBedrockPrices(), withFanOut(fan), func(s *setup) { s.sim.FirstToken, s.sim.Sleep = time.Millisecond, g.sleep })
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Operation": "subagents"})
	var wg sync.WaitGroup
	outs := make([]*bedrockruntime.ConverseOutput, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel),
				System: []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: prefix},
					&types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}}},
				Messages: userMessage(fmt.Sprintf("Subtask %d: trace parcel %d.", i, i))})
		}()
	}
	<-g.arrived // the first reaches the provider's prefill…
	waiting := 0
	deadline := time.After(10 * time.Second) // a bound on a failure, never reached on success
	for waiting < 3 {
		select {
		case <-held: // …the three others wait in the gateway
			waiting++
		case <-deadline:
			g.open()
			wg.Wait()
			t.Fatalf("%d requests held behind the first, want 3", waiting)
		}
	}
	g.open()
	wg.Wait()
	var p int64
	reads := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		r, w := int64(aws.ToInt32(outs[i].Usage.CacheReadInputTokens)), int64(aws.ToInt32(outs[i].Usage.CacheWriteInputTokens))
		p = max(p, r+w)
		if r > 0 && w == 0 && responseHeader(outs[i].ResultMetadata, "Groundhog-Prompt-Cache") == fmt.Sprintf("read=%d write=0", r) {
			reads++
		}
	}
	bill := readFullBill(t, h)
	t.Logf("prefix %d tokens; bill writes %d reads %d", p, bill.CacheWriteTokens, bill.CachedInputTokens)
	if p < 10000 || bill.CacheWriteTokens > p*11/10 || bill.CachedInputTokens < 3*p || reads != 3 {
		t.Fatalf("bill writes %d, reads %d, %d answers read the prefix; want the %d-token prefix written once and read 3 times", bill.CacheWriteTokens, bill.CachedInputTokens, reads, p)
	}
	heldRows := 0
	for _, r := range h.ledgerRows() {
		if r.FanOutHeld {
			heldRows++
		}
	}
	if heldRows != 3 {
		t.Fatalf("%d ledger rows held, want 3", heldRows)
	}
}
