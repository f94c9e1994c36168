//go:build unix

package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir/LOCK so two processes can
// never share a journal directory (each would replay and delete the other's
// live segments). The lock dies with the process, so a kill -9 never leaves
// a stale lock behind.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal directory %s is in use by another process: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	return f.Close() // closing the descriptor releases the flock
}
