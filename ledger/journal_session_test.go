package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"
)

func TestJournalSessionFieldsRoundTrip(t *testing.T) {
	e := testEntry(5)
	e.Session, e.ParentSession = "run-7.sub:2", "run-7"
	e.ProviderCacheReason = "input_changed"
	e.ResultBytes = 70_000
	got, err := readOne(t, appendRecord(nil, &e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, e)
	}
}

// TestJournalVersion3StillReplays reads a record written before the
// session fields existed: the same entry, no session.
func TestJournalVersion3StillReplays(t *testing.T) {
	e := testEntry(6)
	e.PromptCacheSaved, e.PromptCacheBreak, e.FanOutHeld = 1234, "ttl_gap", true
	rec := v3Record(t, e)
	got, err := readOne(t, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("version 3\n got %+v\nwant %+v", got, e)
	}
	// Trailing bytes after a version-3 record's last field are corruption.
	payload := append(append([]byte(nil), rec[recHeaderSize:]...), 0)
	bad := make([]byte, recHeaderSize)
	binary.LittleEndian.PutUint32(bad, uint32(len(payload)))
	binary.LittleEndian.PutUint32(bad[4:], crc32.Checksum(payload, crcTable))
	if _, err := readOne(t, append(bad, payload...)); err == nil {
		t.Fatal("a version-3 record with a trailing byte was accepted")
	}
}

// TestJournalVersion4StillReplays reads a record written before result
// bytes existed: the same entry, its session kept, no result bytes.
func TestJournalVersion4StillReplays(t *testing.T) {
	e := testEntry(7)
	e.Session, e.ParentSession = "run-8", "run-1"
	got, err := readOne(t, v4Record(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("version 4\n got %+v\nwant %+v", got, e)
	}
}
