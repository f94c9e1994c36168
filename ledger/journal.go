package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Journal file format.
//
// A journal segment is a file named <seq>.seg (seq: 20 decimal digits, so
// names sort in commit order) that starts with the 8-byte magic "GHLEDGR1"
// and is followed by records. A record is
//
//	u32 little-endian payload length
//	u32 little-endian CRC-32C of the payload
//	payload
//
// and the payload is the entry in a compact binary form: a version byte, then
// every field of groundhog.LedgerEntry in declaration order, strings as a
// uvarint length plus bytes, integers as varints, the time as unix
// nanoseconds and the four booleans as one flag byte. Version 2 follows the
// flag byte with the prompt-cache fields (Usage.CacheWrite1hTokens,
// PromptCacheSaved, PromptCacheBreak, PromptCacheLostTokens, and FanOutHeld
// as a byte); version 3 adds ProviderCacheReason after them and version 4
// Session and ParentSession after that, version 5 ResultBytes. Version 4
// records replay with no result bytes, version 3 records replay with no
// agent run, version 2 records with no provider verdict either, and version 1
// records, written before the prompt-cache fields existed, with an unknown
// PromptCacheSaved when they had cache tokens.
//
// Each Record appends its record with one copy into the segment's shared
// mapping (journal_map.go) or, unmapped, one pwrite(2); concurrent calls may
// share one append (groupwrite.go). A process killed in the middle of an
// append can leave a torn last record, but no Record call whose record it
// is has returned. A record header of length 0 ends a segment cleanly (the
// preallocated tail of a mapped segment). The CRC is there for torn records
// and for the case the journal does not guard against but must survive: an
// OS crash that leaves a torn or zero-filled tail. Reading stops at the
// first record that does not check out; everything before it is replayed.
const (
	segMagic      = "GHLEDGR1"
	segSuffix     = ".seg"
	recHeaderSize = 8
	recVersion    = recVersion5
	recVersion5   = 5
	recVersion4   = 4 // before ResultBytes
	recVersion3   = 3 // before Session and ParentSession
	recVersion2   = 2 // before ProviderCacheReason
	recVersion1   = 1 // before the prompt-cache fields
	// maxRecordSize bounds one record when reading, so a corrupt length
	// cannot make replay allocate gigabytes.
	maxRecordSize = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt marks a record that fails its length or CRC check.
var errCorrupt = errors.New("corrupt journal record")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendRecord appends the framed record of e to b.
func appendRecord(b []byte, e *groundhog.LedgerEntry) []byte {
	start := len(b)
	b = append(b, make([]byte, recHeaderSize)...)
	b = append(b, recVersion)
	b = appendString(b, e.ID)
	b = binary.AppendVarint(b, e.Time.UnixNano())
	b = appendString(b, e.Tenant)
	b = appendString(b, e.Operation)
	b = appendString(b, e.RequestHash)
	b = appendString(b, string(e.Shape))
	b = appendString(b, e.Model)
	b = appendString(b, e.Provider)
	b = appendString(b, string(e.Outcome))
	b = binary.AppendVarint(b, int64(e.Status))
	b = binary.AppendVarint(b, e.Usage.InputTokens)
	b = binary.AppendVarint(b, e.Usage.CachedInputTokens)
	b = binary.AppendVarint(b, e.Usage.CacheWriteTokens)
	b = binary.AppendVarint(b, e.Usage.OutputTokens)
	b = binary.AppendVarint(b, int64(e.Cost))
	b = binary.AppendVarint(b, int64(e.Saved))
	b = binary.AppendVarint(b, int64(e.FullCost))
	b = binary.AppendVarint(b, int64(e.Latency))
	b = binary.AppendVarint(b, int64(e.Attempt))
	var flags byte
	for i, f := range [...]bool{e.InFlight, e.CacheOn, e.Idempotent, e.Stream} {
		if f {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, e.Usage.CacheWrite1hTokens)
	b = binary.AppendVarint(b, int64(e.PromptCacheSaved))
	b = appendString(b, e.PromptCacheBreak)
	b = binary.AppendVarint(b, e.PromptCacheLostTokens)
	var held byte
	if e.FanOutHeld {
		held = 1
	}
	b = append(b, held)
	b = appendString(b, e.ProviderCacheReason)
	b = appendString(b, e.Session)
	b = appendString(b, e.ParentSession)
	b = binary.AppendVarint(b, e.ResultBytes)
	payload := b[start+recHeaderSize:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	return b
}

// payloadReader decodes the fields of one payload in order; the first
// failure sticks.
type payloadReader struct {
	b   []byte
	bad bool
}

func (r *payloadReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) str() string {
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.bad = true
		return ""
	}
	s := string(r.b[n : n+int(l)])
	r.b = r.b[n+int(l):]
	return s
}

// decodePayload decodes a payload written by appendRecord.
func decodePayload(p []byte, e *groundhog.LedgerEntry) error {
	if len(p) < 2 || (p[0] != recVersion && p[0] != recVersion4 && p[0] != recVersion3 && p[0] != recVersion2 && p[0] != recVersion1) {
		return fmt.Errorf("%w: unknown record version", errCorrupt)
	}
	version := p[0]
	r := payloadReader{b: p[1:]}
	*e = groundhog.LedgerEntry{}
	e.ID = r.str()
	e.Time = time.Unix(0, r.varint()).UTC()
	e.Tenant = r.str()
	e.Operation = r.str()
	e.RequestHash = r.str()
	e.Shape = groundhog.Shape(r.str())
	e.Model = r.str()
	e.Provider = r.str()
	e.Outcome = groundhog.Outcome(r.str())
	e.Status = int(r.varint())
	e.Usage.InputTokens = r.varint()
	e.Usage.CachedInputTokens = r.varint()
	e.Usage.CacheWriteTokens = r.varint()
	e.Usage.OutputTokens = r.varint()
	e.Cost = groundhog.Money(r.varint())
	e.Saved = groundhog.Money(r.varint())
	e.FullCost = groundhog.Money(r.varint())
	e.Latency = time.Duration(r.varint())
	e.Attempt = int(r.varint())
	if r.bad || len(r.b) < 1 {
		return fmt.Errorf("%w: malformed payload", errCorrupt)
	}
	flags := r.b[0]
	r.b = r.b[1:]
	e.InFlight = flags&1 != 0
	e.CacheOn = flags&2 != 0
	e.Idempotent = flags&4 != 0
	e.Stream = flags&8 != 0
	if version == recVersion1 {
		if len(r.b) != 0 {
			return fmt.Errorf("%w: malformed payload", errCorrupt)
		}
		// Its net saving was never computed: unknown, never a silent 0.
		if e.Usage.CachedInputTokens != 0 || e.Usage.CacheWriteTokens != 0 {
			e.PromptCacheSaved = groundhog.CostUnknown
		}
		return nil
	}
	e.Usage.CacheWrite1hTokens = r.varint()
	e.PromptCacheSaved = groundhog.Money(r.varint())
	e.PromptCacheBreak = r.str()
	e.PromptCacheLostTokens = r.varint()
	if r.bad || len(r.b) < 1 || r.b[0] > 1 || (version == recVersion2 && len(r.b) != 1) {
		return fmt.Errorf("%w: malformed payload", errCorrupt)
	}
	e.FanOutHeld = r.b[0] == 1
	r.b = r.b[1:]
	if version == recVersion2 {
		return nil
	}
	e.ProviderCacheReason = r.str()
	if version == recVersion3 {
		if r.bad || len(r.b) != 0 {
			return fmt.Errorf("%w: malformed payload", errCorrupt)
		}
		return nil
	}
	e.Session = r.str()
	e.ParentSession = r.str()
	if version == recVersion5 {
		e.ResultBytes = r.varint()
	}
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("%w: malformed payload", errCorrupt)
	}
	return nil
}

// segmentReader reads the records of one segment file in order.
type segmentReader struct {
	br  *bufio.Reader
	buf []byte
	off int64 // offset of the next record, for error messages
}

func newSegmentReader(r io.Reader) (*segmentReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var magic [len(segMagic)]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Created but the header never reached the kernel (or an OS
			// crash lost it): an empty segment.
			return nil, io.EOF
		}
		return nil, err
	}
	if string(magic[:]) != segMagic {
		return nil, fmt.Errorf("%w: bad segment magic", errCorrupt)
	}
	return &segmentReader{br: br, off: int64(len(segMagic))}, nil
}

// next decodes the next record into e. It returns io.EOF at a clean end of
// the segment and an error wrapping errCorrupt for a torn or damaged record.
func (s *segmentReader) next(e *groundhog.LedgerEntry) error {
	var hdr [recHeaderSize]byte
	if _, err := io.ReadFull(s.br, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w at offset %d: torn header", errCorrupt, s.off)
		}
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	if n == 0 && binary.LittleEndian.Uint32(hdr[4:]) == 0 {
		// The zero-filled preallocated tail of a mapped segment whose
		// process was killed (journal_map.go): no record is empty.
		return io.EOF
	}
	if n == 0 || n > maxRecordSize {
		return fmt.Errorf("%w at offset %d: length %d", errCorrupt, s.off, n)
	}
	if cap(s.buf) < int(n) {
		s.buf = make([]byte, n)
	}
	p := s.buf[:n]
	if _, err := io.ReadFull(s.br, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w at offset %d: torn payload", errCorrupt, s.off)
		}
		return err
	}
	if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
		return fmt.Errorf("%w at offset %d: checksum mismatch", errCorrupt, s.off)
	}
	if err := decodePayload(p, e); err != nil {
		return fmt.Errorf("offset %d: %w", s.off, err)
	}
	s.off += recHeaderSize + int64(n)
	return nil
}

func segmentName(seq uint64) string {
	return fmt.Sprintf("%020d%s", seq, segSuffix)
}

// listSegments returns the sequence numbers of the segment files in dir,
// ascending.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, de := range ents {
		name := de.Name()
		num, ok := strings.CutSuffix(name, segSuffix)
		if !ok || de.IsDir() {
			continue
		}
		seq, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// createSegment creates segment seq in dir and writes its magic. Later
// records go at explicit offsets (a mapped segment's file is longer than its
// records until it is sealed), so the file is not opened O_APPEND.
func createSegment(dir string, seq uint64) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(seq)), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write([]byte(segMagic)); err != nil {
		// Remove the headless file: the next attempt (after the disk has
		// room again) must be able to create this sequence number.
		f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}
