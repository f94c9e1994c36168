package bench

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The pacer sets its thread's timer slack for its sleeps and gives the
// thread back as it found it.
func TestPacerRestoresTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("PR_GET_TIMERSLACK: %v", err)
	}
	p := newPacer()
	during, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	p.stop()
	after, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if during != 1 {
		t.Errorf("timer slack while pacing: %d ns, want 1", during)
	}
	if after != before {
		t.Errorf("timer slack after: %d ns, want %d as before", after, before)
	}
}
