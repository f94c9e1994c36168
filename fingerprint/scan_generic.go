//go:build !amd64

package fingerprint

// haveSIMD is false where there is no assembly string scan: str uses its
// eight-byte loop only.
var haveSIMD = false

func strRun(b []byte) (n int, bs bool) { panic("fingerprint: no SIMD string scan on this platform") }

func validUTF8(b []byte) bool { panic("fingerprint: no SIMD UTF-8 check on this platform") }

func indexAVX2(b []byte, bits []uint64, carry uint64) uint64 {
	panic("fingerprint: no SIMD string index on this platform")
}

var haveAVX512 = false

func index(b []byte, bits []uint64, carry uint64) uint64 { return indexAVX2(b, bits, carry) }

func validUTF8AVX2(b []byte) bool   { panic("fingerprint: no SIMD UTF-8 check on this platform") }
func validUTF8AVX512(b []byte) bool { panic("fingerprint: no SIMD UTF-8 check on this platform") }

func indexUTF8AVX2(b []byte, bits []uint64, st *[96]byte, carry uint64) uint64 {
	panic("fingerprint: no SIMD string index on this platform")
}

func indexUTF8AVX512(b []byte, bits []uint64) bool {
	panic("fingerprint: no SIMD string index on this platform")
}
