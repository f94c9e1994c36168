package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

var updateCLIDocs = flag.Bool("update-cli-docs", false, "rewrite docs/reference/cli from the commands")

// cliDocDir is the command-line reference, generated from the commands.
const cliDocDir = "../../docs/reference/cli"

//go:generate go test -run TestCLIReferenceCurrent -update-cli-docs .

// genCLIDocs writes the Markdown reference of every visible command into dir.
func genCLIDocs(t *testing.T, dir string) {
	t.Helper()
	rootCmd.DisableAutoGenTag = true
	rootCmd.InitDefaultHelpCmd()
	rootCmd.InitDefaultCompletionCmd()
	var hide func(c *cobra.Command)
	hide = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			hide(s)
		}
	}
	hide(rootCmd)
	if err := doc.GenMarkdownTree(rootCmd, dir); err != nil {
		t.Fatal(err)
	}
}

// TestCLIReferenceCurrent: docs/reference/cli is what the commands say
// about themselves. After changing a command or a flag, run
// `go generate ./cmd/groundhog`.
func TestCLIReferenceCurrent(t *testing.T) {
	if *updateCLIDocs {
		if err := os.RemoveAll(cliDocDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cliDocDir, 0o755); err != nil {
			t.Fatal(err)
		}
		genCLIDocs(t, cliDocDir)
		return
	}
	dir := t.TempDir()
	genCLIDocs(t, dir)
	want := readDir(t, dir)
	got := readDir(t, cliDocDir)
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !bytes.Equal(got[n], want[n]) {
			t.Errorf("docs/reference/cli/%s is stale or missing: run go generate ./cmd/groundhog", n)
		}
		delete(got, n)
	}
	for n := range got {
		t.Errorf("docs/reference/cli/%s documents no command: run go generate ./cmd/groundhog", n)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}
