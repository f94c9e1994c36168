package promptcache

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// A snapshot restored into a new Tracker (a restart) keeps diagnosing: the
// next turn is no break, a TTL gap after the restart is still a ttl_gap, and
// the snapshot holds no prompt text.
func TestSnapshotRestore(t *testing.T) {
	g := newRig(t, false)
	c := baseConvo(chat)
	c.system = "Secret-instructions-xyzzy " + c.system
	g.ok(c)
	g.ok(c.next(1))
	var buf bytes.Buffer
	if err := g.tr.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("xyzzy")) || bytes.Contains(buf.Bytes(), []byte("s100")) {
		t.Fatal("the snapshot contains prompt text")
	}
	restarted := NewTracker(Config{Clock: g.clock})
	if err := restarted.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if restarted.Chains() != 1 || restarted.Bytes() != g.tr.Bytes() {
		t.Fatalf("restored %d chains / %d bytes, had 1 / %d", restarted.Chains(), restarted.Bytes(), g.tr.Bytes())
	}
	g.tr = restarted
	res := g.ok(c.next(1).next(2))
	if res.Expected == 0 {
		t.Fatal("after a restart nothing is expected: the chain was lost")
	}
	g.clock.Advance(10 * time.Minute)
	res, _ = g.do(c.next(1).next(2).next(3), nil)
	if res.Cause != CauseTTLGap {
		t.Fatalf("after restart and a 10-minute pause: %+v", res)
	}
	if err := NewTracker(Config{}).Restore(bytes.NewReader([]byte("garbage"))); err == nil {
		t.Fatal("garbage restored")
	}
}

// The LRU keeps at most MaxChains chains and MaxBytes bytes, evicting the
// least recently used.
func TestTrackerBounds(t *testing.T) {
	clock := newClock()
	tr := NewTracker(Config{Clock: clock, MaxChains: 10})
	body := baseConvo(chat).body()
	send := func(op string) {
		call, err := tr.Before(context.Background(), &Request{Tenant: "t", Operation: op, Shape: chat, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		tr.After(context.Background(), call, groundhog.Usage{InputTokens: 1500})
	}
	for i := range 25 {
		send(fmt.Sprint("op", i))
	}
	if tr.Chains() != 10 {
		t.Fatalf("%d chains kept, want 10", tr.Chains())
	}
	per := tr.Bytes() / 10
	small := NewTracker(Config{Clock: clock, MaxBytes: 3 * per})
	tr = small
	for i := range 25 {
		send(fmt.Sprint("op", i))
	}
	if tr.Chains() > 3 || tr.Bytes() > 3*per {
		t.Fatalf("%d chains, %d bytes kept, bound %d bytes", tr.Chains(), tr.Bytes(), 3*per)
	}
	// The most recent survives.
	call, _ := tr.Before(context.Background(), &Request{Tenant: "t", Operation: "op24", Shape: chat, Body: body})
	if call.Diagnosis.Expected == 0 {
		t.Fatal("the most recently used chain was evicted")
	}
}

// Tenants never see each other's chains.
func TestTenantScoped(t *testing.T) {
	g := newRig(t, false)
	c := baseConvo(chat)
	g.ok(c)
	g.tenant = "other"
	call, err := g.tr.Before(context.Background(), &Request{Tenant: "other", Operation: g.op, Shape: chat, Body: c.next(1).body()})
	if err != nil {
		t.Fatal(err)
	}
	if call.Diagnosis.Expected != 0 {
		t.Fatalf("another tenant's prefix was expected: %+v", call.Diagnosis)
	}
}

func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(Config{MaxChains: 8})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := baseConvo(cacheShapes[w%3])
			for i := range 10 {
				c = c.next(i)
				call, err := tr.Before(context.Background(), &Request{Tenant: "t", Operation: fmt.Sprint(w % 4), Shape: c.shape, Body: c.body(), Breakpoints: true})
				if err != nil {
					t.Error(err)
					return
				}
				tr.After(context.Background(), call, groundhog.Usage{InputTokens: int64(call.prefix.Tokens)})
			}
		}()
	}
	wg.Wait()
	var buf bytes.Buffer
	if err := tr.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
}

func TestStableKey(t *testing.T) {
	body := []byte(`{"model":"gpt-5","instructions":"Be kind.","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}],"input":"hi"}`)
	out, key, err := SetCacheKey(responses, body, "support", "v3")
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != len("support:v3:gpt-5:")+12 || key[:17] != "support:v3:gpt-5:" {
		t.Fatalf("key %q", key)
	}
	if want := string(body[:len(body)-1]) + `,"prompt_cache_key":"` + key + `"}`; string(out) != want {
		t.Fatalf("body %s", out)
	}
	// Only what identifies the agent makes the key: not the instructions
	// (a timestamp there is what the diagnosis must name), not a tool's
	// definition, not the input. Tool names and their order do count.
	for _, c := range []struct {
		name string
		body string
		same bool
	}{
		{"respaced tools, other input", `{"model":"gpt-5","instructions":"Be kind.","tools":[ {"parameters":{"type":"object"},"name":"a","type":"function"} ],"input":"other question"}`, true},
		{"timestamp in the instructions", `{"model":"gpt-5","instructions":"Now: 2026-12-05T09:00:00Z. Be kind.","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}],"input":"hi"}`, true},
		{"other tool schema", `{"model":"gpt-5","instructions":"Be kind.","tools":[{"type":"function","name":"a","description":"at 09:01","parameters":{"type":"object","properties":{}}}],"input":"hi"}`, true},
		{"another tool name", `{"model":"gpt-5","instructions":"Be kind.","tools":[{"type":"function","name":"b","parameters":{"type":"object"}}],"input":"hi"}`, false},
		{"a tool added", `{"model":"gpt-5","instructions":"Be kind.","tools":[{"type":"function","name":"a","parameters":{"type":"object"}},{"type":"web_search"}],"input":"hi"}`, false},
		{"another model", `{"model":"gpt-5-mini","instructions":"Be kind.","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}],"input":"hi"}`, false},
	} {
		_, k, err := SetCacheKey(responses, []byte(c.body), "support", "v3")
		if err != nil || (k == key) != c.same {
			t.Errorf("%s: key %q vs %q (same=%v wanted) %v", c.name, k, key, c.same, err)
		}
	}
	// Chat tools name their function; without tools the key is
	// app:version:model.
	chatTools := []byte(`{"model":"gpt-5","tools":[{"type":"function","function":{"name":"a","parameters":{}}}],"messages":[{"role":"user","content":"hi"}]}`)
	if _, k, _ := SetCacheKey(chat, chatTools, "support", "v3"); k != key {
		t.Errorf("chat tool a: key %q, responses tool a: %q", k, key)
	}
	if _, k, _ := SetCacheKey(chat, []byte(`{"model":"gpt-5","messages":[{"role":"system","content":"x"}]}`), "support", "v3"); k != "support:v3:gpt-5" {
		t.Errorf("no tools: key %q", k)
	}
	// The client's key is never overwritten.
	own := []byte(`{"model":"gpt-5","prompt_cache_key":"mine","messages":[{"role":"user","content":"hi"}]}`)
	out, k4, _ := SetCacheKey(chat, own, "support", "v3")
	if k4 != "mine" || !bytes.Equal(out, own) {
		t.Fatalf("client key overwritten: %q %s", k4, out)
	}
	// Through the stage: defaults app = operation, version v1.
	tr := NewTracker(Config{})
	call, err := tr.Before(context.Background(), &Request{Tenant: "t", Operation: "triage", Shape: chat, CacheKey: true,
		Body: []byte(`{"model":"gpt-5","messages":[{"role":"system","content":"Sort tickets."},{"role":"user","content":"hi"}]}`)})
	if err != nil || call.Key != "triage:v1:gpt-5" || !bytes.Contains(call.Body, []byte(call.Key)) {
		t.Fatalf("stage key: %v %q %s", err, call.Key, call.Body)
	}
}

func TestEmbeddingsNotApplicable(t *testing.T) {
	p, err := Parse(groundhog.ShapeEmbeddings, []byte(`{"model":"sim-embed","input":["a","b"]}`))
	if err != nil || !p.NotApplicable {
		t.Fatalf("%v %+v", err, p)
	}
	res, err := Diff(groundhog.ShapeEmbeddings, []byte(`{"model":"e","input":"a"}`), []byte(`{"model":"e","input":"b"}`))
	if err != nil || !res.NotApplicable || !res.Match {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestParseErrors(t *testing.T) {
	for _, b := range []string{``, `[]`, `{`, `{"messages":[1]}`, `{"a":1} x`, `{"messages":"x"}`} {
		_, err := Parse(messages, []byte(b))
		if err == nil {
			t.Errorf("%q parsed", b)
			continue
		}
		if groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("%q: code %v", b, groundhog.ErrorCode(err))
		}
	}
}

// Parsing with the earlier prompt as a hint (the Tracker's fast path) gives
// exactly the segments a plain Parse gives.
func TestHintedParseEqualsParse(t *testing.T) {
	for _, shape := range cacheShapes {
		c := baseConvo(shape)
		c.system = "Now 2026-12-01T09:00:00Z. " + c.system
		c = c.next(1)
		prev, err := Parse(shape, c.body())
		if err != nil {
			t.Fatal(err)
		}
		rec := record(prev, rulesFor(prev), newClock().Now())
		c = c.next(2)
		c.turns[0].user += " edited 123e4567-e89b-12d3-a456-426614174000"
		body := c.body()
		plain, _ := Parse(shape, body)
		hinted, err := parse(shape, body, "", func(*Prefix) *promptRec { return rec }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Tokens != hinted.Tokens || len(plain.Segments) != len(hinted.Segments) {
			t.Fatalf("%s: tokens %d vs %d", shape, plain.Tokens, hinted.Tokens)
		}
		for i := range plain.Segments {
			a, b := plain.Segments[i], hinted.Segments[i]
			if a.Start != b.Start || a.End != b.End || uint32(a.Masked) != uint32(b.Masked) || a.Vol != b.Vol || a.Chain != b.Chain {
				t.Fatalf("%s segment %s: %+v vs %+v", shape, a.Path(), a, b)
			}
		}
	}
}
