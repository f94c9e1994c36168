package mcp

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// stderr is cut into lines of at most stderrLineBytes, however it is
// written, and only the last stderrTailLines are kept for the exit log.
func TestStderrLogIsBounded(t *testing.T) {
	w := &stderrLog{log: slog.New(slog.NewTextHandler(io.Discard, nil)), server: "s"}
	long := strings.Repeat("x", 3*stderrLineBytes)
	for _, chunk := range []string{"first ", "line\n", long[:100], long[100:], "\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	lines := strings.Split(w.tail(), "\n")
	if len(lines) != 2 || lines[0] != "first line" || lines[1] != long[:stderrLineBytes]+"…" {
		t.Fatalf("tail has %d lines, want \"first line\" and a line cut at %d bytes", len(lines), stderrLineBytes)
	}
	for i := range 2 * stderrTailLines {
		_, _ = w.Write([]byte("line " + strings.Repeat("y", i) + "\n"))
	}
	_, _ = w.Write([]byte("unterminated"))
	lines = strings.Split(w.tail(), "\n")
	if len(lines) != stderrTailLines || lines[len(lines)-1] != "unterminated" {
		t.Fatalf("tail %q, want the last %d lines ending with the unterminated one", lines, stderrTailLines)
	}
}
