//go:build linux

package ledger

import (
	"os"
	"syscall"
)

// mapSegment reserves n bytes of disk for f (fallocate: a full disk fails
// here, not on a store into the mapping), extends the file to n bytes and
// maps it shared. Not prefaulted: MAP_POPULATE maps the pages read-only
// and the first store to each would fault again anyway; a Record pays one
// fault per 4 KiB page (a dozen rows).
func mapSegment(f *os.File, n int) ([]byte, error) {
	fd := int(f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, int64(n)); err != nil {
		return nil, err
	}
	m, err := syscall.Mmap(fd, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Truncate(int64(len(segMagic)))
		return nil, err
	}
	return m, nil
}

func unmapSegment(m []byte) error { return syscall.Munmap(m) }
