package fingerprint

// useSIMD makes Compute and Canonicalize use the assembly UTF-8 check
// (validUTF8), string index (index_amd64.s, index.go; the two in one pass,
// indexutf8_amd64.s, where AVX-512 is not used) and string scan
// (strRun, for what the index leaves to the byte-level scan) where the CPU
// has them: on amd64 with AVX2 and BMI1/2 (scan_amd64.s, utf8_amd64.s). Elsewhere the scanner
// finds string ends eight bytes at a time and checks UTF-8 with
// utf8.Valid. Both paths give the same bytes and the same errors for
// every input (simd_test.go compares them).
var useSIMD = haveSIMD

// minSIMD is the body size from which the assembly is used: below it its
// fixed costs (loading its tables, the padded last block of the UTF-8
// check, a call per string where the eight-byte loop would find the end in
// a word or two) outweigh what it saves (BenchmarkSIMDCPULine, a 200-byte
// request: 3–4 % slower with it).
const minSIMD = 512
