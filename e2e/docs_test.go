package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docBlock is a shell block of the documentation marked runnable
// ("```sh runnable"), with the output block that follows it, if any
// ("```output").
type docBlock struct {
	file   string
	line   int
	script string
	want   []string
}

// docFiles lists README.md and every Markdown file under docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files[1:])
	return files
}

// runnableBlocks extracts the runnable blocks of one Markdown file.
func runnableBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	fence := func(i int) []string { // the lines of the block opened at i
		var b []string
		for j := i + 1; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			b = append(b, lines[j])
		}
		return b
	}
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh runnable" {
			continue
		}
		body := fence(i)
		b := docBlock{file: file, line: i + 1, script: strings.Join(body, "\n")}
		j := i + len(body) + 2
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j < len(lines) && strings.TrimSpace(lines[j]) == "```output" {
			b.want = fence(j)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// matchOutput checks that every non-empty expected line appears in got, in
// order; "…" in an expected line stands for any text.
func matchOutput(got string, want []string) (missing string, ok bool) {
	at := 0
	for _, w := range want {
		for _, piece := range strings.Split(strings.TrimRight(w, " "), "…") {
			piece = strings.TrimSpace(piece)
			if piece == "" {
				continue
			}
			k := strings.Index(got[at:], piece)
			if k < 0 {
				return w, false
			}
			at += k + len(piece)
		}
	}
	return "", true
}

// TestDocumentedCommandsRun runs every shell block of README.md and docs/
// marked runnable against the built binary (on PATH as groundhog) and one
// started `groundhog serve`, from a directory where examples/ is the
// repository's, and checks the output block that follows where there is
// one. The documented addresses 127.0.0.1:8080 and 127.0.0.1:18737 are
// replaced by the started gateway's.
func TestDocumentedCommandsRun(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("curl is required to run the documented commands")
		}
		t.Skip("curl not on PATH: the documented commands use it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, f := range docFiles(t, root) {
		blocks = append(blocks, runnableBlocks(t, f)...)
	}
	if len(blocks) == 0 {
		t.Fatal("no runnable blocks found in README.md and docs/")
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--config", filepath.Join(root, "examples/prompt-cache/gh.yaml"),
		"--db", filepath.Join(dir, "gh.db"))
	addr := strings.TrimPrefix(gw.URL, "http://")
	env := append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, b := range blocks {
		name, _ := filepath.Rel(root, b.file)
		script := strings.NewReplacer("127.0.0.1:8080", addr, "127.0.0.1:18737", addr).Replace(b.script)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s:%d: %v\n%s\n--- output:\n%s", name, b.line, err, b.script, out)
			continue
		}
		if missing, ok := matchOutput(string(out), b.want); !ok {
			t.Errorf("%s:%d: output lacks %q (in order)\n--- output:\n%s", name, b.line, missing, out)
		}
	}
}

// TestDocumentedExamplesShip: every examples/ path the documentation names
// is in the repository.
func TestDocumentedExamplesShip(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`examples/[A-Za-z0-9_./$-]*[A-Za-z0-9_]`)
	for _, f := range docFiles(t, root) {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for n := 1; sc.Scan(); n++ {
			for _, p := range re.FindAllString(sc.Text(), -1) {
				p = strings.ReplaceAll(p, "$i", "1")
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					name, _ := filepath.Rel(root, f)
					t.Errorf("%s:%d names %s, which does not ship: %v", name, n, p, err)
				}
			}
		}
		fh.Close()
	}
}

// TestReadmeIsAFrontDoor: the README stays short; the reference lives in
// docs/.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Fatalf("README.md has %d lines; keep it at most 300 and move reference material to docs/", n)
	}
}
