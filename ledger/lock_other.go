//go:build !unix

package ledger

import (
	"os"
	"path/filepath"
)

// lockDir only creates dir/LOCK on platforms without flock: sharing a
// journal directory between processes is not detected there.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
}

func unlockDir(f *os.File) error { return f.Close() }
