// Package evblob is the storage logic the evidence stores share: spooling
// an upload to a temporary file while hashing it and indexing its lines,
// cutting it into chunks, reading a byte range back chunk by chunk, and
// mapping a line range to bytes. Each store supplies only its queries, so
// the SQLite and PostgreSQL stores keep identical blobs.
package evblob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
)

// ChunkBytes is the size of a stored chunk (the last one of a blob is
// shorter). It bounds the memory of every read and write: a few chunks.
const ChunkBytes = 1 << 20

// Chunk is the line index of one chunk.
type Chunk struct {
	NLBefore int64 // '\n' bytes in the chunks before this one
	NL       int64 // '\n' bytes in this chunk
}

// Spooled is an upload written to a temporary file.
type Spooled struct {
	Ref    string
	Bytes  int64
	Lines  int64
	Chunks []Chunk
	// Over is set when the upload passed the spool's limit: the bytes past
	// it were hashed but not kept, so the blob can only be a duplicate.
	Over bool
	f    *os.File
}

// spoolPattern names a spool file; SweepSpool removes what matches it.
const spoolPattern = "groundhog-evidence-*"

// Spool reads r to its end into a temporary file in dir ("" is the
// system's temporary directory), hashing and counting as it goes. Past
// limit bytes (limit < 0: none) it stops writing but keeps hashing, so the
// caller can still recognise a duplicate of a stored blob when the upload is
// over quota. Close removes the file; a process killed mid-upload leaves
// it, for SweepSpool at the next start. A body that fails to arrive is the
// client's error: 408 when it came too slowly (httpguard.BodyError), else
// 400, with http.MaxBytesError kept in the chain.
func Spool(dir string, r io.Reader, limit int64) (*Spooled, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence spool unavailable", err)
		}
	}
	f, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence spool unavailable", err)
	}
	s := &Spooled{f: f}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	var last byte
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := s.add(h, buf[:n], limit); err != nil {
				s.Close()
				return nil, err
			}
			last = buf[n-1]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			s.Close()
			// The client's body failed (slow, cut short, too large): its
			// fault, not the store's.
			return nil, httpguard.BodyError(rerr)
		}
	}
	s.Ref = groundhog.EvidenceRefPrefix + hex.EncodeToString(h.Sum(nil))
	s.Lines = s.newlines()
	if s.Bytes > 0 && last != '\n' {
		s.Lines++
	}
	return s, nil
}

func (s *Spooled) newlines() int64 {
	if len(s.Chunks) == 0 {
		return 0
	}
	c := s.Chunks[len(s.Chunks)-1]
	return c.NLBefore + c.NL
}

// add hashes p, counts its newlines into the chunk index and writes it
// while under limit.
func (s *Spooled) add(h hash.Hash, p []byte, limit int64) error {
	h.Write(p)
	if !s.Over && limit >= 0 && s.Bytes+int64(len(p)) > limit {
		s.Over = true
	}
	if !s.Over {
		if _, err := s.f.Write(p); err != nil {
			return groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence spool unavailable", err)
		}
	}
	for len(p) > 0 {
		if s.Bytes%ChunkBytes == 0 {
			s.Chunks = append(s.Chunks, Chunk{NLBefore: s.newlines()})
		}
		room := ChunkBytes - s.Bytes%ChunkBytes
		part := p[:min(int64(len(p)), room)]
		s.Chunks[len(s.Chunks)-1].NL += int64(bytes.Count(part, []byte{'\n'}))
		s.Bytes += int64(len(part))
		p = p[len(part):]
	}
	return nil
}

// EachChunk calls fn with every chunk in order; data is reused between
// calls. It fails on an Over spool (its bytes are not all there).
func (s *Spooled) EachChunk(fn func(seq int64, c Chunk, data []byte) error) error {
	if s.Over {
		return errors.New("evidence: spool over its limit has no content")
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence spool unavailable", err)
	}
	buf := make([]byte, ChunkBytes)
	for i, c := range s.Chunks {
		n, err := io.ReadFull(s.f, buf)
		if err != nil && !(errors.Is(err, io.ErrUnexpectedEOF) && i == len(s.Chunks)-1) {
			return groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence spool unavailable", err)
		}
		if err := fn(int64(i), c, buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the temporary file.
func (s *Spooled) Close() error {
	s.f.Close()
	return os.Remove(s.f.Name())
}

// CheckRange validates [off, off+n) against a blob of size bytes and
// resolves n < 0 to the rest.
func CheckRange(size, off, n int64) (int64, error) {
	if n < 0 {
		n = size - off
	}
	if off < 0 || off > size || n > size-off {
		return 0, groundhog.Errorf(groundhog.EINVALID, "byte range %d+%d outside a blob of %d bytes", off, n, size)
	}
	return n, nil
}

// NewReader reads bytes [off, off+n) of a blob stored in chunks of
// chunkBytes, fetching one chunk at a time with fetch.
func NewReader(fetch func(seq int64) ([]byte, error), chunkBytes, off, n int64) io.ReadCloser {
	return &reader{fetch: fetch, chunk: chunkBytes, off: off, left: n}
}

type reader struct {
	fetch     func(seq int64) ([]byte, error)
	chunk     int64
	off, left int64
	buf       []byte // rest of the current chunk
	err       error
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	if len(r.buf) == 0 {
		seq := r.off / r.chunk
		data, err := r.fetch(seq)
		if err != nil {
			r.err = err
			return 0, err
		}
		skip := r.off % r.chunk
		if skip > int64(len(data)) || (skip == int64(len(data))) {
			r.err = fmt.Errorf("evidence: chunk %d is %d bytes, shorter than expected", seq, len(data))
			return 0, r.err
		}
		r.buf = data[skip:]
	}
	n := copy(p, r.buf[:min(int64(len(r.buf)), r.left)])
	r.buf = r.buf[n:]
	r.off += int64(n)
	r.left -= int64(n)
	return n, nil
}

func (r *reader) Close() error {
	r.buf = nil
	r.err = errors.New("evidence: reader closed")
	return nil
}

// FindNL returns the chunk holding a blob's k-th '\n' (k ≥ 1): its seq,
// its NLBefore and its data.
type FindNL func(k int64) (seq, nlBefore int64, data []byte, err error)

// Lines maps lines first..last of info's blob to [off, off+n) as
// EvidenceStore.EvidenceLines documents, reading at most two chunks.
func Lines(info *groundhog.EvidenceInfo, chunkBytes, first, last int64, find FindNL) (off, n int64, err error) {
	if first < 1 || last < first {
		return 0, 0, groundhog.Errorf(groundhog.EINVALID, "line range %d-%d: want 1 <= first <= last", first, last)
	}
	if first > info.Lines {
		return 0, 0, groundhog.Errorf(groundhog.ERANGE, "line %d is past the end: the evidence has %d lines", first, info.Lines)
	}
	last = min(last, info.Lines)
	if first > 1 {
		if off, err = afterNL(first-1, chunkBytes, find); err != nil {
			return 0, 0, err
		}
	}
	end := info.Bytes
	if last < info.Lines {
		if end, err = afterNL(last, chunkBytes, find); err != nil {
			return 0, 0, err
		}
	}
	return off, end - off, nil
}

// afterNL returns the offset just past the k-th '\n'.
func afterNL(k, chunkBytes int64, find FindNL) (int64, error) {
	seq, before, data, err := find(k)
	if err != nil {
		return 0, err
	}
	need := k - before
	for i, c := range data {
		if c == '\n' {
			if need--; need == 0 {
				return seq*chunkBytes + int64(i) + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("evidence: chunk %d does not hold newline %d", seq, k)
}

// QuotaError is the error of an upload past a tenant's evidence quota.
func QuotaError(quota int64) error {
	return groundhog.Errorf(groundhog.EQUOTA, "evidence quota of %d bytes exceeded", quota)
}

// SpoolWithin spools r for a tenant that has quota bytes (0: no quota) of
// which usage reports what is used: the spool stops counting at what is
// left (Spooled.Over then says the upload does not fit). Every store's
// PutEvidence starts here, then checks dedup before the quota.
func SpoolWithin(ctx context.Context, dir string, r io.Reader, quota int64, usage func(context.Context) (int64, error)) (*Spooled, error) {
	limit := int64(-1)
	if quota > 0 {
		used, err := usage(ctx)
		if err != nil {
			return nil, err
		}
		limit = max(quota-used, 0)
	}
	return Spool(dir, r, limit)
}

// SweepSpool removes the spool files in dir that uploads killed mid-way
// left behind and returns how many it removed. Run it at start, before any
// upload can be spooling into dir.
func SweepSpool(dir string) (int, error) {
	names, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("evidence: sweep spool: %w", err)
		}
		n++
	}
	return n, nil
}
