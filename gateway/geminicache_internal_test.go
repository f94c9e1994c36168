package gateway

import "testing"

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
		if got := mayNameCache([]byte(body)); got != want {
			t.Errorf("mayNameCache(%s) = %v, want %v", body, got, want)
		}
	}
}
