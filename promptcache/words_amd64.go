package promptcache

import "golang.org/x/sys/cpu"

// haveWordsAVX2 says whether countTokens may classify blocks with
// wordsAVX2 (words_amd64.s).
var haveWordsAVX2 = cpu.X86.HasAVX2

// wordsAVX2 is documented in words_amd64.s.
//
//go:noescape
func wordsAVX2(b []byte, masks []uint64)
