package cache

import (
	"sync/atomic"
	"time"
)

// monoClock is the system clock as the cache reads it: a wall-clock
// reading at most rebase old, moved on by the monotonic time since it.
// time.Since reads the monotonic clock only, where time.Now reads the wall
// clock as well; on some virtual machines each read costs a tenth of a
// microsecond or more, and a hit checks its entry's expiry on every Get.
// The two differ only when the wall clock is stepped, and then for at most
// rebase (the memory tier's own expiry, on the monotonic clock, ignores
// such steps altogether).
type monoClock struct {
	base atomic.Pointer[time.Time]
}

// rebase is how long a wall-clock reading serves.
const rebase = time.Second

func (m *monoClock) Now() time.Time {
	if b := m.base.Load(); b != nil {
		if d := time.Since(*b); d >= 0 && d < rebase {
			return b.Add(d)
		}
	}
	t := time.Now()
	m.base.Store(&t)
	return t
}
