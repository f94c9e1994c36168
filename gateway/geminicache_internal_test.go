package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/wire/gemini"
)

func TestMayNameCache(t *testing.T) {
	for body, want := range map[string]bool{
		`{"contents":[{"parts":[{"text":"hi"}]}]}`:                     false,
		`{"contents":[{"parts":[{"text":"a \u003cb\u003e \u0026"}]}]}`: false,
		`{"cachedContent":"cachedContents/a"}`:                         true,
		`{"cached_content":"a"}`:                                       true,
		`{"\u0063achedContent":"a"}`:                                   true,
		`{"c\u0061chedContent":"a"}`:                                   true,
		`{"cache\u0064Content":"a"}`:                                   true,
		`{"cachedCont\u0065nt":"a"}`:                                   true,
		`{"text":"ends in \u00`:                                        false,
	} {
		if got := mayNameCache([]byte(body), gemini.RefKeys{}); got != want {
			t.Errorf("mayNameCache(%s) = %v, want %v", body, got, want)
		}
	}
}

// BenchmarkGeminiCacheRefCheck is the cost a generate body pays for the
// cache-ownership check when it names no cache (the common case), against
// one that does and is parsed.
func BenchmarkGeminiCacheRefCheck(b *testing.B) {
	text := strings.Repeat("The quarterly report says revenue grew \u003c 5% \u0026 costs fell. ", 1500) // ~100 KB
	plain, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"parts": []any{map[string]any{"text": text}}}}})
	named, _ := json.Marshal(map[string]any{"cachedContent": "cachedContents/a", "contents": []any{map[string]any{"parts": []any{map[string]any{"text": text}}}}})
	b.Run("no reference", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			if mayNameCache(plain, gemini.RefKeys{}) {
				b.Fatal("a plain body may name a cache")
			}
		}
	})
	b.Run("reference parsed", func(b *testing.B) {
		b.SetBytes(int64(len(named)))
		for b.Loop() {
			if len(gemini.CachedContentRefs(named)) != 1 {
				b.Fatal("no reference")
			}
		}
	})
}
