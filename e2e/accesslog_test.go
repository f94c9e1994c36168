package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Every call gets its access line through the gateway's access-log writer,
// in text and in JSON, all of them on stderr after a graceful stop.
func TestAccessLogLinesSurviveGracefulStop(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			gw := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"), "--log-format", format)
			const n = 40
			for i := range n {
				r := post(context.Background(), gw.URL+"/v1/chat/completions", chat(fmt.Sprintf("line %d", i)), nil)
				if r.status != 200 {
					t.Fatalf("call %d: %d %s", i, r.status, r.body)
				}
			}
			gw.stop()
			marker := "msg=call "
			if format == "json" {
				marker = `"msg":"call",`
			}
			out := gw.output()
			if got := strings.Count(out, marker); got != n {
				t.Fatalf("%d access lines after a graceful stop, want %d:\n%s", got, n, out)
			}
		})
	}
}
