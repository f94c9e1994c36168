//go:build !unix

package ledger

import "time"

func cpuTime() time.Duration { return 0 }
