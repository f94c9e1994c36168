package sqlite

import (
	"bytes"
	"io"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

func TestStateConformance(t *testing.T) {
	storetest.RunState(t, func(t *testing.T) groundhog.StateStore { return openTest(t) })
}

func TestEvidenceConformance(t *testing.T) {
	storetest.RunEvidence(t, func(t *testing.T) groundhog.EvidenceStore { return openTest(t) })
}

// TestEvidenceOrphanChunks: chunks a crashed upload left behind (no
// evidence row) are invisible, count against no quota, and the next upload
// of the same bytes completes the blob correctly.
func TestEvidenceOrphanChunks(t *testing.T) {
	db := openTest(t)
	blob := bytes.Repeat([]byte("orphan line\n"), 300_000) // 3.6 MB: 4 chunks
	ref := storetest.Ref(blob)
	if _, err := db.w.ExecContext(ctx, `INSERT INTO evidence_chunks (tenant, ref, seq, nl_before, nl, data) VALUES ('t1', ?, 0, 0, ?, ?)`,
		ref, bytes.Count(blob[:1<<20], []byte("\n")), blob[:1<<20]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.StatEvidence(ctx, "t1", ref); !groundhog.IsNotFound(err) {
		t.Fatalf("orphan chunk visible: %v", err)
	}
	if used, _ := db.EvidenceUsage(ctx, "t1"); used != 0 {
		t.Fatalf("orphan chunk counted: %d", used)
	}
	info, created, err := db.PutEvidence(ctx, "t1", "text/plain", bytes.NewReader(blob), 0)
	if err != nil || !created || info.Ref != ref || info.Lines != 300_000 {
		t.Fatalf("PutEvidence over an orphan: %+v %v %v", info, created, err)
	}
	rc, err := db.ReadEvidence(ctx, "t1", ref, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, blob) {
		t.Fatalf("read back %d bytes that differ from the %d stored", len(got), len(blob))
	}
	// A refused upload leaves no chunk behind.
	if _, _, err := db.PutEvidence(ctx, "t1", "text/plain", bytes.NewReader(blob[1:]), int64(len(blob))+10); groundhog.ErrorCode(err) != groundhog.EQUOTA {
		t.Fatalf("over quota: %v", err)
	}
	var n int
	db.r.QueryRowContext(ctx, "SELECT count(*) FROM evidence_chunks WHERE ref = ?", storetest.Ref(blob[1:])).Scan(&n)
	if n != 0 {
		t.Fatalf("%d chunks left by a refused upload", n)
	}
}

// TestSweepOrphanEvidence: the sweep removes the chunks of uploads that
// never got their evidence row (two crashed uploads, one of 40 chunks:
// several sweep statements), keeps every chunk of stored blobs, and a
// blob stored after the sweep reads back whole.
func TestSweepOrphanEvidence(t *testing.T) {
	db := openTest(t)
	kept := bytes.Repeat([]byte("kept line\n"), 150_000) // 1.5 MB: 2 chunks
	if _, _, err := db.PutEvidence(ctx, "t1", "text/plain", bytes.NewReader(kept), 0); err != nil {
		t.Fatal(err)
	}
	orphan := func(tenant, ref string, chunks int) {
		for seq := range chunks {
			if _, err := db.w.ExecContext(ctx, `INSERT INTO evidence_chunks (tenant, ref, seq, nl_before, nl, data) VALUES (?, ?, ?, 0, 0, x'00')`,
				tenant, ref, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	orphan("t1", storetest.Ref([]byte("crashed upload one")), 40)
	orphan("t2", storetest.Ref([]byte("crashed upload two")), 3)
	// The same ref under another tenant is not claimed by t1's row.
	orphan("t2", storetest.Ref(kept), 1)
	n, err := db.SweepOrphanEvidence(ctx)
	if err != nil || n != 44 {
		t.Fatalf("swept %d chunks (%v), want 44", n, err)
	}
	var left int
	db.r.QueryRowContext(ctx, "SELECT count(*) FROM evidence_chunks").Scan(&left)
	if left != 2 {
		t.Fatalf("%d chunks left, want the stored blob's 2", left)
	}
	if n, err := db.SweepOrphanEvidence(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep removed %d (%v)", n, err)
	}
	rc, err := db.ReadEvidence(ctx, "t1", storetest.Ref(kept), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, kept) {
		t.Fatalf("stored blob damaged by the sweep: %d bytes back of %d", len(got), len(kept))
	}
}

func TestResourceConformance(t *testing.T) {
	storetest.RunResources(t, func(t *testing.T) groundhog.ResourceStore { return openTest(t) })
}

func TestRentedCacheConformance(t *testing.T) {
	storetest.RunRentedCaches(t, func(t *testing.T) groundhog.RentedCacheStore { return openTest(t) })
}
