package ledger

import (
	"errors"
	"fmt"
	"os"
)

// Mapped journal segments.
//
// Where the platform allows it (Linux: journal_map_linux.go), a new segment
// file is given its disk blocks up front (fallocate) and mapped shared into
// memory (by the committer, off the request path). Record then
// copies its framed record into the mapping: the bytes are in the kernel's
// page cache once the copy is done — the same place a write(2) puts them —
// so a kill -9 of the process after Record returned cannot lose the row,
// without a system call per row. No msync, as there was no fsync.
//
// The blocks are reserved before the mapping is used, so a full disk shows
// up as an error when the segment is created (the segment then falls back
// to plain writes, which fail with ENOSPC as before) and never as a fault
// on a store into the mapping. A record that does not fit in the rest of the
// mapping doubles it (blocks reserved first, then mremap), up to
// maxSegmentMap; where that fails, the record goes to the file with one
// pwrite(2) at its offset, as do all later records of that segment.
//
// Sealing a segment unmaps it and truncates the file to the bytes written.
// A segment left by a killed process still has its zero-filled preallocated
// tail: a record header of length 0 ends the segment cleanly (a real record
// is never empty).

// maxSegmentMap bounds how far a segment's mapping grows (growSegment);
// records past it are written with pwrite(2). A variable for tests.
var maxSegmentMap int64 = 256 << 20

// mapJournal is switched off by tests of the unmapped (pwrite) path.
var mapJournal = true

// segmentMapBytes is how much of a new segment is preallocated and mapped:
// room for rows rows of 512 bytes (a gateway row is 200–300 bytes; the
// committer seals a segment shortly after it reaches rows), bounded. Rows
// past it are written with pwrite(2).
func segmentMapBytes(rows int) int {
	return min(max(rows*512, 64<<10), 32<<20)
}

// writeRecords appends b (whole framed records) to seg: into its mapping
// when it fits, else with one pwrite(2) at the end of the written bytes. On
// a failed write the file is cut back to the bytes written before, so a torn
// record cannot end replay of later ones.
func (seg *segment) writeRecords(b []byte) error {
	end := seg.size + int64(len(b))
	if seg.m != nil && end > int64(len(seg.m)) && end <= maxSegmentMap {
		// Rows arrive faster than the committer seals segments (a burst,
		// or a store outage: segments are then cut at 65,536 rows): double
		// the mapping rather than fall back to a write(2) per row.
		if m, err := growSegment(seg.f, seg.m, int(min(max(2*int64(len(seg.m)), end), maxSegmentMap))); err == nil {
			seg.m = m
		}
	}
	if seg.m != nil && end <= int64(len(seg.m)) {
		copy(seg.m[seg.size:end], b)
		seg.size = end
		return nil
	}
	if _, err := seg.f.WriteAt(b, seg.size); err != nil {
		if seg.size < int64(len(seg.m)) {
			clear(seg.m[seg.size:min(end, int64(len(seg.m)))]) // the file keeps the mapping's length
		}
		if terr := seg.f.Truncate(max(seg.size, int64(len(seg.m)))); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("ledger: journal write: %w", err)
	}
	seg.size = end
	return nil
}

// sealFile unmaps seg, cuts its file to the bytes written and closes it.
func (seg *segment) sealFile() error {
	var err error
	if seg.m != nil {
		err = unmapSegment(seg.m)
		seg.m = nil
		if terr := seg.f.Truncate(seg.size); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	if cerr := seg.f.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	seg.f = nil
	return err
}

// mapNewSegment preallocates and maps a freshly created segment file (whose
// magic is written) for rows rows, prefaulting about prev bytes (the size of
// the segment before it). Where mapping is not possible the segment is left
// unmapped and written with pwrite(2).
func mapNewSegment(f *os.File, rows int, prev int64) []byte {
	if !mapJournal {
		return nil
	}
	m, err := mapSegment(f, segmentMapBytes(rows), int(prev+prev/4)+64<<10)
	if err != nil {
		return nil
	}
	return m
}
