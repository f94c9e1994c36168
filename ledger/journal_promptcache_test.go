package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"reflect"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// v1Record frames e as a version-1 record (before the prompt-cache fields):
// e must have zero prompt-cache fields, no session and no result bytes,
// whose current encoding is the nine zero bytes at the end of the payload.
func v1Record(t *testing.T, e groundhog.LedgerEntry) []byte {
	return olderRecord(t, e, recVersion1, 9)
}

// v2Record frames e as a version-2 record (before ProviderCacheReason): e
// must have none, no session and no result bytes, whose encoding is the
// four zero bytes at the end.
func v2Record(t *testing.T, e groundhog.LedgerEntry) []byte {
	return olderRecord(t, e, recVersion2, 4)
}

// v3Record frames e as a version-3 record (before Session and
// ParentSession): e must have neither and no result bytes, whose encoding
// is the three zero bytes at the end.
func v3Record(t *testing.T, e groundhog.LedgerEntry) []byte {
	return olderRecord(t, e, recVersion3, 3)
}

// v4Record frames e as a version-4 record (before ResultBytes): e must have
// none, whose encoding is the zero byte at the end.
func v4Record(t *testing.T, e groundhog.LedgerEntry) []byte {
	return olderRecord(t, e, recVersion4, 1)
}

func olderRecord(t *testing.T, e groundhog.LedgerEntry, version byte, cut int) []byte {
	t.Helper()
	b := appendRecord(nil, &e)
	payload := append([]byte(nil), b[recHeaderSize:len(b)-cut]...)
	for _, c := range b[len(b)-cut:] {
		if c != 0 {
			t.Fatalf("entry has fields version %d lacks: %x", version, b[len(b)-cut:])
		}
	}
	payload[0] = version
	out := make([]byte, recHeaderSize, recHeaderSize+len(payload))
	binary.LittleEndian.PutUint32(out, uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:], crc32.Checksum(payload, crcTable))
	return append(out, payload...)
}

func readOne(t *testing.T, rec []byte) (groundhog.LedgerEntry, error) {
	t.Helper()
	sr, err := newSegmentReader(io.MultiReader(bytesReader(segMagic), bytesReader(string(rec))))
	if err != nil {
		t.Fatal(err)
	}
	var got groundhog.LedgerEntry
	err = sr.next(&got)
	return got, err
}

func TestJournalPromptCacheFieldsRoundTrip(t *testing.T) {
	e := testEntry(4)
	e.Usage.CacheWrite1hTokens = 2
	e.PromptCacheSaved, e.PromptCacheBreak, e.PromptCacheLostTokens, e.FanOutHeld = -987_654_321, "tools_reordered", 4096, true
	e.ProviderCacheReason = "tools_changed"
	got, err := readOne(t, appendRecord(nil, &e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, e)
	}
	e.PromptCacheSaved = groundhog.CostUnknown
	if got, err := readOne(t, appendRecord(nil, &e)); err != nil || got.PromptCacheSaved != groundhog.CostUnknown {
		t.Fatalf("unknown saving read back as %d (%v)", got.PromptCacheSaved, err)
	}
}

// TestJournalVersion1StillReplays reads records written before the
// prompt-cache fields existed.
func TestJournalVersion1StillReplays(t *testing.T) {
	withCache := testEntry(1) // has cached and write tokens
	noCache := testEntry(2)
	noCache.Usage.CachedInputTokens, noCache.Usage.CacheWriteTokens = 0, 0
	for _, tc := range []struct {
		name      string
		e         groundhog.LedgerEntry
		wantSaved groundhog.Money
	}{
		{"with cache tokens: saving unknown", withCache, groundhog.CostUnknown},
		{"without cache tokens: saving 0", noCache, 0},
	} {
		got, err := readOne(t, v1Record(t, tc.e))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.e
		want.PromptCacheSaved = tc.wantSaved
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, want)
		}
	}
	// A version-1 record with trailing bytes is corrupt, not misread.
	rec := v1Record(t, noCache)
	payload := append(append([]byte(nil), rec[recHeaderSize:]...), 0)
	bad := make([]byte, recHeaderSize)
	binary.LittleEndian.PutUint32(bad, uint32(len(payload)))
	binary.LittleEndian.PutUint32(bad[4:], crc32.Checksum(payload, crcTable))
	if _, err := readOne(t, append(bad, payload...)); err == nil {
		t.Fatal("a version-1 record with a trailing byte was accepted")
	}
}

// TestJournalVersion2StillReplays reads records written before the
// provider's cache verdict was booked: no verdict, everything else kept.
func TestJournalVersion2StillReplays(t *testing.T) {
	e := testEntry(3)
	e.PromptCacheSaved, e.PromptCacheBreak, e.PromptCacheLostTokens, e.FanOutHeld = 12, "ttl_gap", 900, true
	got, err := readOne(t, v2Record(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("\n got %+v\nwant %+v", got, e)
	}
	rec := v2Record(t, e)
	payload := append(append([]byte(nil), rec[recHeaderSize:]...), 0)
	bad := make([]byte, recHeaderSize)
	binary.LittleEndian.PutUint32(bad, uint32(len(payload)))
	binary.LittleEndian.PutUint32(bad[4:], crc32.Checksum(payload, crcTable))
	if _, err := readOne(t, append(bad, payload...)); err == nil {
		t.Fatal("a version-2 record with a trailing byte was accepted")
	}
}
