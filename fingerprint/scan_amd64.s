#include "textflag.h"

// The bytes strRunAVX2 compares with: '"', '\\', 0x1f (the largest
// control character) and the letters of the canonical escapes b f n r t.
DATA strbytes<>+0(SB)/8, $0x74726e66621f5c22
GLOBL strbytes<>(SB), RODATA|NOPTR, $8

// func strRunAVX2(b []byte) (n int, bs bool)
//
// strRunAVX2 scans the body of a JSON string from b[0], which is not
// escaped (the byte after the opening quote, or after an escape str
// decoded), 32 bytes at a time and stops at the first byte str must look
// at: an unescaped '"', a control character, or a backslash whose escape is
// not one of the canonical \" \\ \b \f \n \r \t (so \/, \u, or an invalid
// escape). Canonical escapes are stepped over inside the loop: the escaped
// positions of each block come from its backslash bitmap with an add and
// its carry (simdjson's find_escaped_branchless), so the only
// data-dependent branch per block is "is there a stop in it".
//
// Only whole blocks are read. n is the offset of the stop, or, when fewer
// than 32 bytes are left before one is found, the offset of the first byte
// not classified (one less when the last classified byte is a backslash
// starting an escape, so the caller reads the escape whole). bs reports
// whether b[:n] holds a backslash.
TEXT ·strRunAVX2(SB), NOSPLIT, $0-33
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ AX, AX // offset of the current block
	XORQ R8, R8 // 1 if the last byte of the previous block starts an escape
	XORQ R9, R9 // the backslashes seen

	// Y15 '"', Y14 '\\', Y13 0x1f, Y12..Y8 'b' 'f' 'n' 'r' 't'. VEX forms
	// only: a legacy-SSE move into an X register costs a state transition.
	VPBROADCASTB strbytes<>+0(SB), Y15
	VPBROADCASTB strbytes<>+1(SB), Y14
	VPBROADCASTB strbytes<>+2(SB), Y13
	VPBROADCASTB strbytes<>+3(SB), Y12
	VPBROADCASTB strbytes<>+4(SB), Y11
	VPBROADCASTB strbytes<>+5(SB), Y10
	VPBROADCASTB strbytes<>+6(SB), Y9
	VPBROADCASTB strbytes<>+7(SB), Y8

block:
	LEAQ 32(AX), CX
	CMPQ CX, DX
	JA   exhausted

	VMOVDQU   (SI)(AX*1), Y0
	VPCMPEQB  Y0, Y15, Y1 // '"'
	VPCMPEQB  Y0, Y14, Y2 // '\\'
	VPMINUB   Y0, Y13, Y3
	VPCMPEQB  Y0, Y3, Y3  // < 0x20
	VPOR      Y1, Y3, Y3  // '"' or control
	VPCMPEQB  Y0, Y12, Y4
	VPCMPEQB  Y0, Y11, Y5
	VPOR      Y4, Y5, Y4
	VPCMPEQB  Y0, Y10, Y5
	VPCMPEQB  Y0, Y9, Y6
	VPOR      Y5, Y6, Y5
	VPCMPEQB  Y0, Y8, Y6
	VPOR      Y1, Y2, Y7
	VPOR      Y4, Y5, Y4
	VPOR      Y6, Y7, Y6
	VPOR      Y4, Y6, Y4  // the second byte of a canonical escape
	VPMOVMSKB Y3, R11     // '"' or control
	VPMOVMSKB Y2, R12     // backslash
	VPMOVMSKB Y4, R13     // canonical escape letter

	// Escaped positions E (simdjson): B = the backslashes not escaped by
	// the previous block's last one, follows = B<<1 | carry-in; a run of
	// backslashes escapes the byte after it iff it is odd, which adding
	// the runs' odd-position starts to B reveals.
	MOVQ R8, CX
	NOTQ CX
	ANDQ CX, R12          // B
	LEAQ (R8)(R12*2), DI  // follows (33 bits)
	MOVQ DI, CX
	NOTQ CX
	ANDQ R12, CX
	ANDL $0xaaaaaaaa, CX  // runs of B starting at an odd position
	ADDQ R12, CX          // bit 32 is the carry out
	MOVQ CX, R10
	SHRQ $32, R10         // carry: this block's last byte starts an escape
	ADDL CX, CX           // (sum << 1) mod 2^32
	XORL $0x55555555, CX
	ANDL DI, CX           // E

	// stop = unescaped '"' or control | backslash before an escaped byte
	// that is no canonical escape letter
	MOVQ  CX, DI
	NOTQ  DI
	ANDQ  DI, R11
	NOTQ  R13
	ANDQ  CX, R13         // escaped, not canonical
	TESTQ $1, R13
	JNZ   prevblock       // its backslash ends the previous block
	ORQ   R8, R9          // else an escape from there was canonical: seen
	SHRQ  $1, R13
	ORQ   R13, R11
	JNZ   stop

	MOVQ R10, CX
	SHLQ $31, CX
	NOTQ CX
	ANDQ R12, CX          // an escape into the next block is counted there
	ORQ  CX, R9
	MOVQ R10, R8
	ADDQ $32, AX
	JMP  block

stop:
	TZCNTQ R11, CX
	BZHIQ  CX, R12, R12   // the backslashes before the stop only
	ORQ    R12, R9
	ADDQ   CX, AX
	JMP    ret

prevblock:
	DECQ AX
	JMP  ret

exhausted:
	SUBQ R8, AX

ret:
	VZEROUPPER
	MOVQ AX, n+24(FP)
	TESTQ R9, R9
	SETNE bs+32(FP)
	RET
