package fingerprint

// useSIMD makes Compute and Canonicalize use the assembly string scan
// (strRun) and UTF-8 check (validUTF8) where the CPU has them: on amd64
// with AVX2 and BMI1/2 (scan_amd64.s, utf8_amd64.s). Elsewhere the scanner
// finds string ends eight bytes at a time and checks UTF-8 with
// utf8.Valid. Both paths give the same bytes and the same errors for
// every input (simd_test.go compares them).
var useSIMD = haveSIMD
