//go:build linux

package ledger

import (
	"os"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): prefault the pages
// writable, as the first store to each would.
const madvPopulateWrite = 23

// mapSegment reserves n bytes of disk for f (fallocate: a full disk fails
// here, not on a store into the mapping), extends the file to n bytes and
// maps it shared. The pages are prefaulted writable where the kernel can
// (MADV_POPULATE_WRITE; MAP_POPULATE would map them read-only and every
// first store would fault again), so Record's copy does not take the page
// fault; on older kernels it does, one per 4 KiB page. Only the first
// populate bytes are prefaulted (what the previous segment used, about):
// prefaulting pages no row will reach costs more than it saves.
func mapSegment(f *os.File, n, populate int) ([]byte, error) {
	fd := int(f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, int64(n)); err != nil {
		return nil, err
	}
	m, err := syscall.Mmap(fd, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Truncate(int64(len(segMagic)))
		return nil, err
	}
	// Best effort: EINVAL before 5.14.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&m[0])), uintptr(min(populate, n)), madvPopulateWrite)
	return m, nil
}

func unmapSegment(m []byte) error { return syscall.Munmap(m) }
