package explicitcache

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// clock is a simulated clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// heldProvider is a provider account whose creates wait until release is
// closed, so requests can overlap a create.
type heldProvider struct {
	mu      sync.Mutex
	creates int
	arrived chan struct{}
	release chan struct{}
	clk     *clock
}

func (p *heldProvider) CountTokens(context.Context, Owner, []byte) (int64, error) { return 30_000, nil }
func (p *heldProvider) Create(_ context.Context, o Owner, _ []byte) (Created, error) {
	p.mu.Lock()
	p.creates++
	n := p.creates
	p.mu.Unlock()
	p.arrived <- struct{}{}
	<-p.release
	now := p.clk.Now()
	return Created{Name: fmt.Sprintf("cachedContents/c%d", n), Tokens: 30_000, CreateTime: now, Expire: now.Add(10 * time.Minute)}, nil
}
func (p *heldProvider) Extend(context.Context, Owner, Created, time.Duration) (time.Time, error) {
	return p.clk.Now().Add(10 * time.Minute), nil
}
func (p *heldProvider) Delete(context.Context, Owner, Created) error      { return nil }
func (p *heldProvider) Forget(context.Context, Owner, Created, time.Time) {}

// TestOneCreateForConcurrentRequests: requests that arrive while the
// cache for their prefix is being created go without it; one cache is
// made, and the requests after it name it.
func TestOneCreateForConcurrentRequests(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}
	p := &heldProvider{arrived: make(chan struct{}, 16), release: make(chan struct{}), clk: clk}
	m := New(Config{Model: model, MinUses: 3, Provider: p, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Rates: func(string, int64) (Rates, bool) { return flash, true }})
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"doc"}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"q%d"}]}]}`, i))
	}
	o := Owner{Tenant: "t", Operation: "default", Model: "gemini-2.5-flash"}
	ctx := context.Background()
	for i := range 2 {
		if u := m.Before(ctx, o, body(i)); u != nil {
			t.Fatalf("request %d named a cache", i)
		}
		clk.add(6 * time.Minute)
	}
	first := make(chan *Use)
	go func() { first <- m.Before(ctx, o, body(2)) }()
	<-p.arrived // the create is under way
	for i := 3; i < 8; i++ {
		if u := m.Before(ctx, o, body(i)); u != nil {
			t.Fatalf("request %d during the create named %s", i, u.Name)
		}
	}
	close(p.release)
	u := <-first
	if u == nil || u.Name != "cachedContents/c1" || p.creates != 1 {
		t.Fatalf("first %+v, creates %d: want one cache, named by the request that made it", u, p.creates)
	}
	if u := m.Before(ctx, o, body(9)); u == nil || u.Name != "cachedContents/c1" {
		t.Fatalf("the next request: %+v", u)
	}
}
