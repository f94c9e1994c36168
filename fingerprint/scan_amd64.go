package fingerprint

import "golang.org/x/sys/cpu"

// haveSIMD says whether str may use strRunAVX2 (scan_amd64.s).
var haveSIMD = cpu.X86.HasAVX2 && cpu.X86.HasBMI1 && cpu.X86.HasBMI2

// strRunAVX2 is documented in scan_amd64.s.
//
//go:noescape
func strRunAVX2(b []byte) (n int, bs bool)

func strRun(b []byte) (n int, bs bool) { return strRunAVX2(b) }

// validUTF8AVX2 is documented in utf8_amd64.s.
//
//go:noescape
func validUTF8AVX2(b []byte) bool

// validUTF8AVX512 is documented in utf8_amd64.s.
//
//go:noescape
func validUTF8AVX512(b []byte) bool

func validUTF8(b []byte) bool {
	if haveAVX512 && !noAVX512 {
		return validUTF8AVX512(b)
	}
	return validUTF8AVX2(b)
}

// indexAVX2 is documented in index_amd64.s.
//
//go:noescape
func indexAVX2(b []byte, bits []uint64, carry uint64) uint64

// indexAVX512 is documented in index_amd64.s.
//
//go:noescape
func indexAVX512(b []byte, bits []uint64, carry uint64) uint64

// haveAVX512 says whether buildIndex may use indexAVX512.
var haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// index classifies b into bits (indexAVX2's contract) with the widest
// variant the CPU has.
func index(b []byte, bits []uint64, carry uint64) uint64 {
	if haveAVX512 && !noAVX512 {
		return indexAVX512(b, bits, carry)
	}
	return indexAVX2(b, bits, carry)
}

// indexUTF8AVX2 is documented in indexutf8_amd64.s.
//
//go:noescape
func indexUTF8AVX2(b []byte, bits []uint64, st *[96]byte, carry uint64) uint64

// indexUTF8AVX512 is documented in indexutf8avx512_amd64.s.
//
//go:noescape
func indexUTF8AVX512(b []byte, bits []uint64) bool
