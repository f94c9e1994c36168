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
	got, err := readOne(t, appendRecord(nil, &e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, e)
	}
}

// TestJournalVersion2StillReplays reads a record written before the
// session fields existed: the same entry, no session.
func TestJournalVersion2StillReplays(t *testing.T) {
	e := testEntry(6)
	e.PromptCacheSaved, e.PromptCacheBreak, e.FanOutHeld = 1234, "ttl_gap", true
	b := appendRecord(nil, &e)
	if tail := b[len(b)-2:]; tail[0] != 0 || tail[1] != 0 {
		t.Fatalf("entry has a session: %x", tail)
	}
	payload := append([]byte(nil), b[recHeaderSize:len(b)-2]...)
	payload[0] = recVersion2
	rec := make([]byte, recHeaderSize, recHeaderSize+len(payload))
	binary.LittleEndian.PutUint32(rec, uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, crcTable))
	got, err := readOne(t, append(rec, payload...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("version 2\n got %+v\nwant %+v", got, e)
	}
	// Trailing bytes after a version-2 record's last field are corruption.
	payload = append(payload, 0)
	bad := make([]byte, recHeaderSize)
	binary.LittleEndian.PutUint32(bad, uint32(len(payload)))
	binary.LittleEndian.PutUint32(bad[4:], crc32.Checksum(payload, crcTable))
	if _, err := readOne(t, append(bad, payload...)); err == nil {
		t.Fatal("a version-2 record with a trailing byte was accepted")
	}
}
