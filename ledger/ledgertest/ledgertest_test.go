package ledgertest

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

func TestDeterministic(t *testing.T) {
	o := Options{Calls: 2000, Seed: 3}
	var a, b bytes.Buffer
	if _, err := WriteJSONL(&a, o); err != nil {
		t.Fatal(err)
	}
	WriteJSONL(&b, o)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same options, different logs")
	}
	if n := bytes.Count(a.Bytes(), []byte("\n")); n != 2000 {
		t.Fatalf("%d lines, want 2000", n)
	}
	var rows, inFlight, unknown int
	hashes := map[string]bool{}
	err := LedgerRows(o, pricing.Default(), 300, func(rs []groundhog.LedgerEntry) error {
		for _, r := range rs {
			rows++
			hashes[r.RequestHash] = true
			if r.InFlight {
				inFlight++
			}
			if !r.Cost.Known() {
				unknown++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// About 15 % repeats, some of them concurrent, some unknown costs.
	repeats := rows - len(hashes)
	if rows != 2000 || repeats < 200 || repeats > 400 || inFlight == 0 || unknown == 0 {
		t.Fatalf("rows %d repeats %d in flight %d unknown %d", rows, repeats, inFlight, unknown)
	}
}

// TestWriteFile writes a workload to $GROUNDHOG_LEDGER_WORKLOAD with
// $GROUNDHOG_LEDGER_CALLS calls (default 1,000,000), for trying
// "groundhog analyze" by hand.
func TestWriteFile(t *testing.T) {
	path := os.Getenv("GROUNDHOG_LEDGER_WORKLOAD")
	if path == "" {
		t.Skip("set GROUNDHOG_LEDGER_WORKLOAD=FILE to write a workload file")
	}
	calls := 1_000_000
	if s := os.Getenv("GROUNDHOG_LEDGER_CALLS"); s != "" {
		calls, _ = strconv.Atoi(s)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := WriteJSONL(f, Options{Calls: calls, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d calls, %d bytes to %s", calls, n, path)
}
