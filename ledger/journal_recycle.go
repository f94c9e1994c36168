package ledger

import (
	"errors"
	"os"
	"path/filepath"
)

// Recycled journal segments.
//
// A fresh segment costs the kernel more than the rows written into it: the
// file's creation, its blocks (fallocate), the mapping, a page fault or a
// populate for each 4 KiB page (a page-cache page allocated and zeroed), and
// at the end munmap, truncate and unlink, which free it all again. At a
// gateway's rate that was 0.7–1.4 µs a row (BenchmarkSegmentLifecycle), a
// seventh of the ledger's cost on a cache hit. So one committed segment is
// kept, still open and mapped, and becomes the next active segment: its
// pages are already in the page cache and in the page tables, and a row
// costs its copy (BenchmarkSegmentRecycled: about 25 ns a row).
//
// The rule that keeps replay exact: a recycled file never shows a record of
// its previous use. The records of a committed segment are cleared
// (zeroed) in the mapping, and only then is the file renamed out of the
// segments' names (to spareName, which replay and ReadJournal do not read);
// the next rotation renames it to its new sequence number. So a file under a
// segment's name holds its own records or nothing but its magic and a zero
// tail, exactly like a new mapped segment (a record header of length 0 and
// CRC 0 ends a segment, journal.go). The first record header is cleared
// first, so a kill -9 in the middle of the clear leaves a committed segment
// that reads as empty, which replay removes. The zeros are in the page cache
// once stored, as Record's bytes are: what any later reader, replay after a
// kill -9 included, sees. A spare file left by a killed process is removed
// by OpenWriter.
//
// An OS crash (outside the journal's guarantee, as before) can write back
// some pages and not others. A recycled file may then hold, past the new
// records, old records that a page boundary happens to align: those are
// rows that were committed before the file was recycled, with their own IDs,
// so replay's dedupe by ID stores them once, as after any replay of a
// committed segment. No row is ever invented.
//
// Bounds: at most one segment is kept aside as the spare, and one sealed
// segment is kept mapped while it waits for its commit (later ones are
// sealed as before, so an outage never holds more than that). A segment
// whose mapping grew past the standard size (a burst), or whose records
// went past its mapping (pwrite), is sealed and removed as before: it is cut
// to its records when sealed, and the next segment is a new file. The files keep
// their preallocated blocks (about 1 MiB each at the default BatchSize), and
// as they live on, the kernel writes their dirty pages back now and then
// (every ~30 s, where a file removed within 200 ms never was).

// recycleSegments switches recycling off (every segment is then sealed and
// removed as before), to compare the two.
var recycleSegments = true

// spareName is the spare segment's file name in the journal directory: not
// a segment's name (listSegments skips it).
const spareName = "segment.spare"

// holdSealed reports whether rotate should keep seg (just sealed) open and
// mapped so that it can be recycled once committed. Committer only.
func (w *Writer) holdSealed(seg *segment) bool {
	// A segment with records past its mapping (pwrite) is cut to its
	// records when sealed; so is one whose mapping grew in a burst.
	if !recycleSegments || seg.m == nil || w.held > 0 || len(seg.m) > segmentMapBytes(w.batch) ||
		seg.size > int64(len(seg.m)) {
		return false
	}
	w.held++
	return true
}

// retire disposes of seg once every row of it is in the store: it becomes
// the spare segment (cleared, see above) if it was kept mapped and there is
// none yet, else its file is sealed and removed. Committer only.
func (w *Writer) retire(seg *segment) {
	path := filepath.Join(w.dir, segmentName(seg.seq))
	if seg.f != nil {
		w.held--
		if w.spare == nil && seg.m != nil && seg.size <= int64(len(seg.m)) {
			// The first header first: a kill from here on leaves a
			// segment that reads as empty.
			clear(seg.m[len(segMagic) : len(segMagic)+recHeaderSize])
			clear(seg.m[len(segMagic)+recHeaderSize : seg.size])
			seg.size = int64(len(segMagic))
			seg.n, seg.chunks, seg.spilled, seg.sent = 0, nil, false, 0
			if err := os.Rename(path, filepath.Join(w.dir, spareName)); err != nil {
				w.log.Warn("ledger: recycle journal segment", "err", err)
				w.dropSpare(seg, path)
				return
			}
			w.spare = seg
			return
		}
		if err := seg.sealFile(); err != nil {
			w.log.Warn("ledger: seal journal segment", "err", err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.log.Warn("ledger: remove committed journal segment", "err", err)
	}
}

// reuseSpare renames the spare segment's file to sequence number seq and
// returns it as a new, empty segment; nil if there is no spare or the
// rename fails (the spare is then removed). Committer only.
func (w *Writer) reuseSpare(seq uint64) *segment {
	seg := w.spare
	if seg == nil {
		return nil
	}
	w.spare = nil
	from := filepath.Join(w.dir, spareName)
	if err := os.Rename(from, filepath.Join(w.dir, segmentName(seq))); err != nil {
		w.log.Warn("ledger: recycle journal segment", "err", err)
		w.dropSpare(seg, from)
		return nil
	}
	seg.seq = seq
	return seg
}

// dropSpare seals a spare segment and removes its file, path.
func (w *Writer) dropSpare(seg *segment, path string) {
	if err := seg.sealFile(); err != nil {
		w.log.Warn("ledger: seal journal segment", "err", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.log.Warn("ledger: remove journal segment", "err", err)
	}
}
