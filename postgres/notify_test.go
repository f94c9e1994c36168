package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/internal/wake"
)

// TestWakerAcrossReplicas: a Publish through one replica's Waker wakes the
// waiter of that topic, and only it, in another replica.
func TestWakerAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	wa, err := a.Listen(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()
	wb, err := b.Listen(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := wake.IdemNotifier{T: wb}
	woken := n.Subscribe(sctx, "acme", "k1")
	other := n.Subscribe(sctx, "acme", "k2")
	wake.IdemNotifier{T: wa}.Notify("acme", "k1")
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("replica b's waiter was not woken by replica a's Notify")
	}
	select {
	case <-other:
		t.Error("the wake-up of k1 woke the waiter of k2")
	default:
	}
}
