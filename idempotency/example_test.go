package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// mailServer is a fake mail API with an idempotency contract of its own,
// like most payment and messaging APIs: a send that repeats an
// Idempotency-Key it has seen returns the first message's ID and sends
// nothing.
type mailServer struct {
	mu    sync.Mutex
	sent  int               // emails actually delivered
	byKey map[string]string // idempotency key → message ID
}

func (m *mailServer) Send(idempotencyKey, to, subject string) (messageID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.byKey[idempotencyKey]; ok {
		return id
	}
	m.sent++
	id := fmt.Sprintf("msg-%d", m.sent)
	m.byKey[idempotencyKey] = id
	return id
}

func (m *mailServer) Sent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent
}

// manualClock is a groundhog.Clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// An agent tool sends an email exactly once, although the agent retries
// and the first worker crashes between sending and recording the result.
// The operation record makes retries replay the stored result; the
// downstream key (the same for every attempt of the operation) makes the
// mail server ignore the second send of the worker that took over.
func Example_sendEmailOnce() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "groundhog-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "groundhog.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	clock := &manualClock{now: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)}
	svc := idempotency.New(idempotency.Options{Store: db, Clock: clock, Lease: 30 * time.Second})
	mail := &mailServer{byKey: map[string]string{}}

	// The tool call as the agent makes it, every time it retries.
	const tenant, key = "acme", "run-42/step-7/send_email"
	hash, err := idempotency.PayloadHash([]byte(`{"to":"ada@example.com","subject":"Your invoice"}`))
	if err != nil {
		log.Fatal(err)
	}
	sendEmail := func(ctx context.Context, op *groundhog.Operation) (*groundhog.Response, error) {
		id := mail.Send(idempotency.DownstreamKey(op), "ada@example.com", "Your invoice")
		body, err := json.Marshal(map[string]any{"message_id": id, "attempt": op.Attempts})
		return &groundhog.Response{Status: 200, ContentType: "application/json", Body: body}, err
	}

	// Worker 1 claims the operation, sends the email and crashes before it
	// can record the result: nobody renews its lease any more.
	claim, _, _, err := svc.Begin(ctx, tenant, key, hash)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sendEmail(ctx, claim.Op()); err != nil {
		log.Fatal(err)
	}
	claim.Abandon()
	fmt.Println("worker 1 crashed; emails sent:", mail.Sent())

	// The agent retries at once: the operation is still running.
	_, _, err = svc.Do(ctx, tenant, key, hash, sendEmail)
	fmt.Println("retry during the lease:", groundhog.ErrorCode(err))

	// After the lease expired, the next retry takes over (attempt 2) and
	// sends again with the same downstream key: the mail server dedupes.
	clock.Advance(31 * time.Second)
	res, replayed, err := svc.Do(ctx, tenant, key, hash, sendEmail)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("retry after the lease: replayed=%v %s\n", replayed, res.Body)

	// The agent lost that answer too and retries once more: a replay.
	res, replayed, err = svc.Do(ctx, tenant, key, hash, sendEmail)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("later retry: replayed=%v %s\n", replayed, res.Body)
	fmt.Println("emails sent:", mail.Sent())

	// Output:
	// worker 1 crashed; emails sent: 1
	// retry during the lease: conflict
	// retry after the lease: replayed=false {"attempt":2,"message_id":"msg-1"}
	// later retry: replayed=true {"attempt":2,"message_id":"msg-1"}
	// emails sent: 1
}
