package ledger

import "github.com/groundhog-ai/groundhog"

// Row chunks are reused once committed (docs/design/0003-ledger-journal.md). A chunk holds
// BatchSize rows (2048 × 288 bytes by default, about 590 KB): allocating a
// fresh one every BatchSize rows cost the request that crossed the boundary
// a large zeroed allocation (fresh pages from the heap, about 0.2 µs a row
// spread over the batch) and the GC as much garbage. A committed chunk is
// read by nobody — AppendLedger returned and stores do not keep the slice
// (sqlite and postgres insert synchronously) — so it is cleared (its rows
// hold strings the GC must be able to free) and handed to the next segment.

// maxFreeChunks bounds the chunks kept for reuse: the active segment's and
// one more cover steady traffic; a burst's extra chunks go to the GC.
const maxFreeChunks = 2

// newChunkLocked returns an empty chunk of capacity w.batch: a reused one
// when there is one. w.mu is held.
func (w *Writer) newChunkLocked() []groundhog.LedgerEntry {
	if n := len(w.freeChunks); n > 0 {
		c := w.freeChunks[n-1]
		w.freeChunks[n-1] = nil
		w.freeChunks = w.freeChunks[:n-1]
		return c
	}
	return make([]groundhog.LedgerEntry, 0, w.batch)
}

// clearChunks clears the committed chunks that reuseChunksLocked may keep
// (at most maxFreeChunks of capacity w.batch) and returns them, so that the
// clear (about 590 KB a chunk) runs before the committer takes w.mu, not
// while Record waits for it. The caller holds the only references.
func (w *Writer) clearChunks(chunks [][]groundhog.LedgerEntry) [][]groundhog.LedgerEntry {
	kept := chunks[:0]
	for _, c := range chunks {
		if len(kept) == maxFreeChunks {
			break
		}
		if cap(c) != w.batch {
			continue
		}
		clear(c)
		kept = append(kept, c[:0])
	}
	clear(chunks[len(kept):]) // the rest go to the GC
	return kept
}

// reuseChunksLocked keeps committed chunks, cleared by clearChunks, for
// reuse, up to maxFreeChunks. w.mu is held.
func (w *Writer) reuseChunksLocked(chunks [][]groundhog.LedgerEntry) {
	for _, c := range chunks {
		if len(w.freeChunks) >= maxFreeChunks {
			return
		}
		w.freeChunks = append(w.freeChunks, c)
	}
}
