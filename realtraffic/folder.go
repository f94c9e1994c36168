package realtraffic

import (
	"os"
	"path/filepath"
	"testing"
)

// Folder returns the folder of recorded provider traffic named by
// GROUNDHOG_TEST_REALTRAFFIC for a test that replays it. The test is skipped
// when the variable is unset, and fails instead when
// GROUNDHOG_TEST_REQUIRE_SERVICES=1 asks for every service; it fails too
// when the folder holds no INDEX.tsv.
func Folder(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GROUNDHOG_TEST_REALTRAFFIC")
	if dir == "" {
		const msg = "GROUNDHOG_TEST_REALTRAFFIC is unset: set it to the folder of recorded provider traffic to run this test"
		if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg + " (GROUNDHOG_TEST_REQUIRE_SERVICES=1)")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
		t.Fatalf("GROUNDHOG_TEST_REALTRAFFIC=%s: %v", dir, err)
	}
	return dir
}
