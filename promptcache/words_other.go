//go:build !amd64

package promptcache

// haveWordsAVX2 is false where there is no assembly classification:
// countTokens classifies eight bytes at a time in Go.
var haveWordsAVX2 = false

func wordsAVX2(b []byte, masks []uint64) {
	panic("promptcache: no AVX2 word classification on this platform")
}
