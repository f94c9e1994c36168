package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

func TestCompactionConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := Default()
	if err := c.LoadFile(write("compaction:\n  model: sim-small\n  min_state_tokens: 2000\n  target_percent: 25\n  min_saving_usd: \"0.01\"\n  steps_left: 30\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	cc := c.Compaction
	if cc.Model != "sim-small" || cc.MinStateTokens != 2000 || cc.TargetPercent != 25 || cc.StepsLeft != 30 ||
		cc.MinSaving != 10*groundhog.Microdollar*1000 || cc.MaxOutputTokens != 4096 {
		t.Errorf("loaded %+v", cc)
	}
	for _, bad := range []string{"compaction:\n  target_percent: 0\n", "compaction:\n  target_percent: 101\n",
		"compaction:\n  min_saving_usd: \"-1\"\n", "compaction:\n  min_saving_usd: abc\n", "compaction:\n  steps_left: -2\n",
		"compaction:\n  max_output_tokens: 0\n", "compaction:\n  threshold: 3\n"} {
		c := Default()
		err := c.LoadFile(write(bad))
		if err == nil {
			err = c.Finish()
		}
		if err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
