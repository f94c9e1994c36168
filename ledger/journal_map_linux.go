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

const mremapMayMove = 1 // MREMAP_MAYMOVE

// mapSegment reserves n bytes of disk for f (fallocate: a full disk fails
// here, not on a store into the mapping), extends the file to n bytes and
// maps it shared. The first populate bytes (what the previous segment used,
// about) are prefaulted writable where the kernel can (MADV_POPULATE_WRITE;
// MAP_POPULATE would map them read-only and every first store would fault
// again), so Record's copy does not take the page fault; on older kernels,
// and past populate, it does, one per 4 KiB page. Prefaulting pages no row
// will reach would cost more than it saves.
//
// The mapping is made with raw system calls (not syscall.Mmap, which only
// unmaps what it mapped itself) so that growSegment can mremap it.
func mapSegment(f *os.File, n, populate int) ([]byte, error) {
	fd := int(f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, int64(n)); err != nil {
		return nil, err
	}
	addr, _, errno := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED, uintptr(fd), 0)
	if errno != 0 {
		_ = f.Truncate(int64(len(segMagic)))
		return nil, errno
	}
	m := unsafe.Slice((*byte)(addrPointer(addr)), n)
	// Best effort: EINVAL before 5.14.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(min(populate, n)), madvPopulateWrite)
	return m, nil
}

// growSegment reserves disk for the first n bytes of f and extends the
// mapping m of f to n bytes (it may move). On failure m is unchanged.
func growSegment(f *os.File, m []byte, n int) ([]byte, error) {
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(n)); err != nil {
		return nil, err
	}
	addr, _, errno := syscall.Syscall6(syscall.SYS_MREMAP, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(n), mremapMayMove, 0, 0)
	if errno != 0 {
		return nil, errno
	}
	return unsafe.Slice((*byte)(addrPointer(addr)), n), nil
}

func unmapSegment(m []byte) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), 0); errno != 0 {
		return errno
	}
	return nil
}

// addrPointer turns the address of a mapping (outside the Go heap, so never
// moved or collected) returned by a system call into a pointer.
func addrPointer(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
