//go:build unix

package ledger

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// TestJournalFilesOwnerOnly: the journal directory is 0700 and its files
// (segments, lock) 0600 under a permissive umask: rows name tenants and
// request hashes.
func TestJournalFilesOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "journal")
	w, err := OpenWriter(context.Background(), openDB(t), WriterOptions{JournalDir: dir, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if err := w.Record(groundhog.LedgerEntry{ID: "1", Time: time.Now(), Tenant: "t", Outcome: groundhog.OutcomeUpstream}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("journal dir: %v %v", st.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) < 2 {
		t.Fatalf("journal holds %d files, want a segment and the lock", len(ents))
	}
	for _, e := range ents {
		info, _ := e.Info()
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %o, want 600", e.Name(), m)
		}
	}
	rows, err := ReadJournal(dir)
	if err != nil || len(rows) != 1 || rows[0].ID != "1" {
		t.Fatalf("ReadJournal = %v %v, want the recorded row", rows, err)
	}
}
