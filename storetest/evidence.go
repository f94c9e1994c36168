package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/evblob"
)

// RunEvidence runs the EvidenceStore conformance suite. open is called once
// per subtest and must return an empty store of its own.
func RunEvidence(t *testing.T, open func(t *testing.T) groundhog.EvidenceStore) {
	for _, st := range evidenceTests {
		t.Run(st.name, func(t *testing.T) { st.fn(t, open(t)) })
	}
}

var evidenceTests = []struct {
	name string
	fn   func(t *testing.T, s groundhog.EvidenceStore)
}{
	{"Evidence/PutStatRead", testEvidencePut},
	{"Evidence/LineCount", testEvidenceLineCount},
	{"Evidence/Dedup", testEvidenceDedup},
	{"Evidence/ByteRanges", testEvidenceByteRanges},
	{"Evidence/LineRanges", testEvidenceLineRanges},
	{"Evidence/TenantIsolation", testEvidenceTenants},
	{"Evidence/Quota", testEvidenceQuota},
	{"Evidence/ReadErrorStoresNothing", testEvidenceReadError},
	{"Evidence/ConcurrentSameBytes", testEvidenceConcurrent},
}

// Ref returns the evidence ref of b.
func Ref(b []byte) string {
	h := sha256.Sum256(b)
	return groundhog.EvidenceRefPrefix + hex.EncodeToString(h[:])
}

// bigBlob is a blob of four chunks: short lines (some empty, some with
// multi-byte UTF-8) across the first chunk boundaries, then one line longer
// than a chunk with binary bytes, then a last line without '\n'.
func bigBlob() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 2*evblob.ChunkBytes+evblob.ChunkBytes/10; i++ {
		if i%13 != 0 { // every 13th line is empty
			fmt.Fprintf(&b, "line %d %s", i+1, strings.Repeat("é", i%50))
		}
		b.WriteByte('\n')
	}
	b.Write(bytes.Repeat([]byte{0xff, 0x00, 'x'}, evblob.ChunkBytes/3+7))
	b.WriteByte('\n')
	b.WriteString("no newline at the end")
	return b.Bytes()
}

func putBytes(t *testing.T, s groundhog.EvidenceStore, tenant string, b []byte, quota int64) (*groundhog.EvidenceInfo, bool) {
	t.Helper()
	info, created, err := s.PutEvidence(ctx, tenant, "text/plain; charset=utf-8", bytes.NewReader(b), quota)
	must(t, err, "PutEvidence")
	return info, created
}

func readAll(t *testing.T, s groundhog.EvidenceStore, tenant, ref string, off, n int64) []byte {
	t.Helper()
	rc, err := s.ReadEvidence(ctx, tenant, ref, off, n)
	must(t, err, fmt.Sprintf("ReadEvidence(%d, %d)", off, n))
	defer rc.Close()
	b, err := io.ReadAll(rc)
	must(t, err, "read evidence")
	return b
}

func testEvidencePut(t *testing.T, s groundhog.EvidenceStore) {
	for _, b := range [][]byte{[]byte("one\ntwo\nthree"), bigBlob(), {}} {
		info, created := putBytes(t, s, "t1", b, 0)
		if !created || info.Ref != Ref(b) || info.Bytes != int64(len(b)) || info.Lines != lineCount(b) ||
			info.ContentType != "text/plain; charset=utf-8" || info.Tenant != "t1" || info.CreatedAt.IsZero() {
			t.Fatalf("PutEvidence(%d bytes) = %+v created %v, want ref %s, %d lines", len(b), info, created, Ref(b), lineCount(b))
		}
		st, err := s.StatEvidence(ctx, "t1", info.Ref)
		must(t, err, "StatEvidence")
		if *st != *info {
			t.Fatalf("StatEvidence = %+v, want %+v", st, info)
		}
		if got := readAll(t, s, "t1", info.Ref, 0, -1); !bytes.Equal(got, b) {
			t.Fatalf("read back %d bytes, want the %d stored", len(got), len(b))
		}
	}
	_, err := s.StatEvidence(ctx, "t1", Ref([]byte("never stored")))
	wantCode(t, err, groundhog.ENOTFOUND, "StatEvidence of an unknown ref")
	_, err = s.ReadEvidence(ctx, "t1", Ref([]byte("never stored")), 0, -1)
	wantCode(t, err, groundhog.ENOTFOUND, "ReadEvidence of an unknown ref")
}

// lineCount is the reference definition of EvidenceStore's line count.
func lineCount(b []byte) int64 {
	n := int64(bytes.Count(b, []byte{'\n'}))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

func testEvidenceLineCount(t *testing.T, s groundhog.EvidenceStore) {
	for _, tc := range []struct {
		in    string
		lines int64
	}{{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n\n", 2}, {"a\r\nb\r\n", 2}} {
		info, _ := putBytes(t, s, "t1", []byte(tc.in), 0)
		if info.Lines != tc.lines {
			t.Errorf("%q has %d lines, want %d", tc.in, info.Lines, tc.lines)
		}
	}
}

func testEvidenceDedup(t *testing.T, s groundhog.EvidenceStore) {
	b := bigBlob()
	first, created := putBytes(t, s, "t1", b, 0)
	if !created {
		t.Fatal("first upload not created")
	}
	again, created, err := s.PutEvidence(ctx, "t1", "application/octet-stream", bytes.NewReader(b), 0)
	must(t, err, "PutEvidence again")
	if created || *again != *first {
		t.Fatalf("second upload = %+v created %v, want the first's info and created false", again, created)
	}
	used, err := s.EvidenceUsage(ctx, "t1")
	must(t, err, "EvidenceUsage")
	if used != int64(len(b)) {
		t.Fatalf("usage %d after storing %d bytes twice, want %d (stored once)", used, len(b), len(b))
	}
}

func testEvidenceByteRanges(t *testing.T, s groundhog.EvidenceStore) {
	b := bigBlob()
	info, _ := putBytes(t, s, "t1", b, 0)
	size := int64(len(b))
	c := int64(evblob.ChunkBytes)
	for _, r := range [][2]int64{{0, 1}, {0, 100}, {size - 1, 1}, {size - 10, 10}, {c - 3, 7}, {c, c}, {c - 1, c + 2}, {size / 2, 12345}, {17, size - 17}, {size, 0}, {5, 0}} {
		if got := readAll(t, s, "t1", info.Ref, r[0], r[1]); !bytes.Equal(got, b[r[0]:r[0]+r[1]]) {
			t.Fatalf("bytes %d+%d: got %d bytes that differ from the blob's", r[0], r[1], len(got))
		}
	}
	for _, r := range [][2]int64{{-1, 1}, {size, 1}, {size + 1, -1}, {0, size + 1}, {size - 5, 6}} {
		_, err := s.ReadEvidence(ctx, "t1", info.Ref, r[0], r[1])
		wantCode(t, err, groundhog.EINVALID, fmt.Sprintf("ReadEvidence(%d, %d) outside %d bytes", r[0], r[1], size))
	}
}

// lineBytes is the reference line slicer: lines first..last of b.
func lineBytes(b []byte, first, last int64) []byte {
	lines := bytes.SplitAfter(b, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return bytes.Join(lines[first-1:min(last, int64(len(lines)))], nil)
}

func testEvidenceLineRanges(t *testing.T, s groundhog.EvidenceStore) {
	b := bigBlob()
	info, _ := putBytes(t, s, "t1", b, 0)
	n := info.Lines
	// Lines whose ends fall in different chunks, and the chunk boundaries.
	var mids []int64
	var nl int64
	for i, c := range b {
		if c == '\n' {
			nl++
			if int64(i)%evblob.ChunkBytes > evblob.ChunkBytes-300 {
				mids = append(mids, nl, nl+1)
			}
		}
	}
	if len(mids) == 0 {
		t.Fatal("bigBlob has no line ending near a chunk boundary")
	}
	ranges := [][2]int64{{1, 1}, {1, 3}, {n / 2, n/2 + 5}, {n, n}, {n - 2, n}, {1, n}, {n - 1, n + 50}, {97, 99}}
	for _, m := range mids {
		ranges = append(ranges, [2]int64{m, m}, [2]int64{m - 1, m + 1})
	}
	for _, r := range ranges {
		off, cnt, err := s.EvidenceLines(ctx, "t1", info.Ref, r[0], r[1])
		must(t, err, fmt.Sprintf("EvidenceLines(%d, %d)", r[0], r[1]))
		want := lineBytes(b, r[0], r[1])
		if got := b[off : off+cnt]; !bytes.Equal(got, want) {
			t.Fatalf("lines %d-%d = bytes %d+%d (%.40q…), want %d bytes (%.40q…)", r[0], r[1], off, cnt, got, len(want), want)
		}
	}
	_, _, err := s.EvidenceLines(ctx, "t1", info.Ref, n+1, n+1)
	wantCode(t, err, groundhog.ERANGE, "line past the end")
	for _, r := range [][2]int64{{0, 1}, {3, 2}, {-1, 4}} {
		_, _, err := s.EvidenceLines(ctx, "t1", info.Ref, r[0], r[1])
		wantCode(t, err, groundhog.EINVALID, fmt.Sprintf("EvidenceLines(%d, %d)", r[0], r[1]))
	}
	empty, _ := putBytes(t, s, "t1", nil, 0)
	_, _, err = s.EvidenceLines(ctx, "t1", empty.Ref, 1, 1)
	wantCode(t, err, groundhog.ERANGE, "line 1 of an empty blob")
}

func testEvidenceTenants(t *testing.T, s groundhog.EvidenceStore) {
	b := []byte("tenant one's secret log\n")
	info, _ := putBytes(t, s, "t1", b, 0)
	_, err := s.StatEvidence(ctx, "t2", info.Ref)
	wantCode(t, err, groundhog.ENOTFOUND, "t2 StatEvidence of t1's ref")
	_, err = s.ReadEvidence(ctx, "t2", info.Ref, 0, -1)
	wantCode(t, err, groundhog.ENOTFOUND, "t2 ReadEvidence of t1's ref")
	_, _, err = s.EvidenceLines(ctx, "t2", info.Ref, 1, 1)
	wantCode(t, err, groundhog.ENOTFOUND, "t2 EvidenceLines of t1's ref")
	if used, err := s.EvidenceUsage(ctx, "t2"); err != nil || used != 0 {
		t.Fatalf("t2 usage %d, %v; want 0", used, err)
	}
	// The same bytes uploaded by t2 are new to t2: created, counted for t2.
	if _, created := putBytes(t, s, "t2", b, 0); !created {
		t.Fatal("t2's upload of bytes t1 stored reported as a duplicate (leaks t1's evidence)")
	}
	if used, _ := s.EvidenceUsage(ctx, "t2"); used != int64(len(b)) {
		t.Fatalf("t2 usage %d, want %d", used, len(b))
	}
}

func testEvidenceQuota(t *testing.T, s groundhog.EvidenceStore) {
	a := []byte("12345678")
	putBytes(t, s, "t1", a, 10)
	_, _, err := s.PutEvidence(ctx, "t1", "text/plain", bytes.NewReader([]byte("abcde")), 10)
	wantCode(t, err, groundhog.EQUOTA, "upload past the quota")
	_, err = s.StatEvidence(ctx, "t1", Ref([]byte("abcde")))
	wantCode(t, err, groundhog.ENOTFOUND, "refused upload stored")
	if used, _ := s.EvidenceUsage(ctx, "t1"); used != 8 {
		t.Fatalf("usage %d after a refused upload, want 8", used)
	}
	if _, created := putBytes(t, s, "t1", a, 10); created {
		t.Fatal("duplicate at the quota reported created")
	}
	if _, created := putBytes(t, s, "t1", []byte("xy"), 10); !created {
		t.Fatal("upload that exactly fills the quota refused")
	}
	// Another tenant has its own quota.
	putBytes(t, s, "t2", []byte("abcdefghij"), 10)
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n >= 3*evblob.ChunkBytes/2 {
		return 0, errors.New("client went away")
	}
	k := min(len(p), 3*evblob.ChunkBytes/2-f.n)
	for i := range k {
		p[i] = 'z'
	}
	f.n += k
	return k, nil
}

func testEvidenceReadError(t *testing.T, s groundhog.EvidenceStore) {
	if _, _, err := s.PutEvidence(ctx, "t1", "text/plain", &failingReader{}, 0); err == nil {
		t.Fatal("PutEvidence succeeded with a failing reader")
	}
	if used, _ := s.EvidenceUsage(ctx, "t1"); used != 0 {
		t.Fatalf("usage %d after a failed upload, want 0", used)
	}
}

// testEvidenceConcurrent uploads the same bytes from several writers at
// once: exactly one creates the blob, all get its ref, it is stored once.
func testEvidenceConcurrent(t *testing.T, s groundhog.EvidenceStore) {
	b := bigBlob()
	const n = 4
	var (
		wg      sync.WaitGroup
		created = make([]bool, n)
		errs    = make([]error, n)
		refs    = make([]string, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var info *groundhog.EvidenceInfo
			info, created[i], errs[i] = s.PutEvidence(ctx, "t1", "text/plain", bytes.NewReader(b), int64(len(b))+10)
			if info != nil {
				refs[i] = info.Ref
			}
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		must(t, errs[i], fmt.Sprintf("writer %d", i))
		if refs[i] != Ref(b) {
			t.Fatalf("writer %d got ref %s", i, refs[i])
		}
		if created[i] {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d writers created the blob, want exactly 1", won)
	}
	if used, _ := s.EvidenceUsage(ctx, "t1"); used != int64(len(b)) {
		t.Fatalf("usage %d, want %d (stored once, within the quota)", used, len(b))
	}
}
