#include "textflag.h"

// Tables of indexUTF8AVX2: the same as utf8_amd64.s's (utf8b1high,
// utf8b1low, utf8b2high, utf8incomplete) and index_amd64.s's (idxhi,
// idxlo), copied because a <> symbol is private to its file.
DATA fub1high<>+0(SB)/8, $0x0202020202020202
DATA fub1high<>+8(SB)/8, $0x4915012180808080
DATA fub1high<>+16(SB)/8, $0x0202020202020202
DATA fub1high<>+24(SB)/8, $0x4915012180808080
GLOBL fub1high<>(SB), RODATA|NOPTR, $32
DATA fub1low<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA fub1low<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
DATA fub1low<>+16(SB)/8, $0xcbcbcb8b8383a3e7
DATA fub1low<>+24(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL fub1low<>(SB), RODATA|NOPTR, $32
DATA fub2high<>+0(SB)/8, $0x0101010101010101
DATA fub2high<>+8(SB)/8, $0x01010101babaaee6
DATA fub2high<>+16(SB)/8, $0x0101010101010101
DATA fub2high<>+24(SB)/8, $0x01010101babaaee6
GLOBL fub2high<>(SB), RODATA|NOPTR, $32
DATA fuincomplete<>+0(SB)/8, $0xffffffffffffffff
DATA fuincomplete<>+8(SB)/8, $0xffffffffffffffff
DATA fuincomplete<>+16(SB)/8, $0xffffffffffffffff
DATA fuincomplete<>+24(SB)/8, $0xbfdfefffffffffff
GLOBL fuincomplete<>(SB), RODATA|NOPTR, $32
DATA fuidxhi<>+0(SB)/8, $0x0804020000010000
DATA fuidxhi<>+8(SB)/8, $0x0000000000000000
DATA fuidxhi<>+16(SB)/8, $0x0804020000010000
DATA fuidxhi<>+24(SB)/8, $0x0000000000000000
GLOBL fuidxhi<>(SB), RODATA|NOPTR, $32
DATA fuidxlo<>+0(SB)/8, $0x00040008000d0000
DATA fuidxlo<>+8(SB)/8, $0x0004000200000000
DATA fuidxlo<>+16(SB)/8, $0x00040008000d0000
DATA fuidxlo<>+24(SB)/8, $0x0004000200000000
GLOBL fuidxlo<>(SB), RODATA|NOPTR, $32

// Broadcast bytes, read as memory operands (the loop has no spare
// register for them).
DATA fuquote<>+0(SB)/8, $0x2222222222222222
DATA fuquote<>+8(SB)/8, $0x2222222222222222
DATA fuquote<>+16(SB)/8, $0x2222222222222222
DATA fuquote<>+24(SB)/8, $0x2222222222222222
GLOBL fuquote<>(SB), RODATA|NOPTR, $32
DATA fubslash<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA fubslash<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA fubslash<>+16(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA fubslash<>+24(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL fubslash<>(SB), RODATA|NOPTR, $32
DATA fuc1f<>+0(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA fuc1f<>+8(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA fuc1f<>+16(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA fuc1f<>+24(SB)/8, $0x1f1f1f1f1f1f1f1f
GLOBL fuc1f<>(SB), RODATA|NOPTR, $32
DATA fuzero<>+0(SB)/8, $0x0000000000000000
DATA fuzero<>+8(SB)/8, $0x0000000000000000
DATA fuzero<>+16(SB)/8, $0x0000000000000000
DATA fuzero<>+24(SB)/8, $0x0000000000000000
GLOBL fuzero<>(SB), RODATA|NOPTR, $32
DATA fuc60<>+0(SB)/8, $0x6060606060606060
DATA fuc60<>+8(SB)/8, $0x6060606060606060
DATA fuc60<>+16(SB)/8, $0x6060606060606060
DATA fuc60<>+24(SB)/8, $0x6060606060606060
GLOBL fuc60<>(SB), RODATA|NOPTR, $32
DATA fuc70<>+0(SB)/8, $0x7070707070707070
DATA fuc70<>+8(SB)/8, $0x7070707070707070
DATA fuc70<>+16(SB)/8, $0x7070707070707070
DATA fuc70<>+24(SB)/8, $0x7070707070707070
GLOBL fuc70<>(SB), RODATA|NOPTR, $32
DATA fuc80<>+0(SB)/8, $0x8080808080808080
DATA fuc80<>+8(SB)/8, $0x8080808080808080
DATA fuc80<>+16(SB)/8, $0x8080808080808080
DATA fuc80<>+24(SB)/8, $0x8080808080808080
GLOBL fuc80<>(SB), RODATA|NOPTR, $32
DATA fuc0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA fuc0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA fuc0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA fuc0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL fuc0f<>(SB), RODATA|NOPTR, $32
DATA fuodd<>+0(SB)/8, $0xaaaaaaaaaaaaaaaa
GLOBL fuodd<>(SB), RODATA|NOPTR, $8
DATA fueven<>+0(SB)/8, $0x5555555555555555
GLOBL fueven<>(SB), RODATA|NOPTR, $8

// IDXHALF classifies the 32 bytes in X for the string index: RQ the
// quotes, RB the backslashes, RC the control characters, RN the bytes that
// are not a canonical escape letter (" \ b f n r t). Temporaries Y2-Y4.
#define IDXHALF(X, RQ, RB, RC, RN) \
	VPCMPEQB  fuquote<>(SB), X, Y2; \
	VPMOVMSKB Y2, RQ; \
	VPCMPEQB  fubslash<>(SB), X, Y3; \
	VPMOVMSKB Y3, RB; \
	VPMINUB   fuc1f<>(SB), X, Y4; \
	VPCMPEQB  X, Y4, Y4; \
	VPMOVMSKB Y4, RC; \
	VPSRLW    $4, X, Y2; \
	VPAND     Y15, Y2, Y2; \
	VPSHUFB   Y2, Y14, Y2; \
	VPAND     Y15, X, Y3; \
	VPSHUFB   Y3, Y13, Y3; \
	VPAND     Y3, Y2, Y2; \
	VPCMPEQB  fuzero<>(SB), Y2, Y2; \
	VPMOVMSKB Y2, RN

// UTF8HALF checks the 32 bytes in X, P being the 32 before them, exactly
// as validUTF8AVX2's multibyte step, and ORs the errors into Y8.
// Temporaries Y2-Y5.
#define UTF8HALF(X, P) \
	VPERM2I128 $0x21, X, P, Y2; \
	VPALIGNR   $15, Y2, X, Y3; \
	VPSRLW     $4, Y3, Y4; \
	VPAND      Y15, Y4, Y4; \
	VPSHUFB    Y4, Y12, Y4; \
	VPAND      Y15, Y3, Y3; \
	VPSHUFB    Y3, Y11, Y3; \
	VPAND      Y3, Y4, Y4; \
	VPSRLW     $4, X, Y3; \
	VPAND      Y15, Y3, Y3; \
	VPSHUFB    Y3, Y10, Y3; \
	VPAND      Y3, Y4, Y4; \
	VPALIGNR   $14, Y2, X, Y3; \
	VPALIGNR   $13, Y2, X, Y5; \
	VPSUBUSB   fuc60<>(SB), Y3, Y3; \
	VPSUBUSB   fuc70<>(SB), Y5, Y5; \
	VPOR       Y3, Y5, Y3; \
	VPAND      fuc80<>(SB), Y3, Y3; \
	VPXOR      Y3, Y4, Y4; \
	VPOR       Y4, Y8, Y8

// func indexUTF8AVX2(b []byte, bits []uint64, st *[96]byte, carry uint64) uint64
//
// indexUTF8AVX2 is indexAVX2 (same contract, same bitmaps, carry in and
// out) and validUTF8AVX2 in one pass over the len(b)/64 whole blocks of
// b: each block is loaded once for both. The UTF-8 check's state carries
// across calls in *st: bytes 0-31 the 32 bytes before b (zero at the
// start), 32-63 the errors found so far, 64-95 where the last block ends
// inside a sequence. Once a zero-padded last block has been passed too
// (buildIndexUTF8), the text is valid UTF-8 iff bytes 32-95 of *st are
// all zero: the same lookups as validUTF8AVX2 (Keiser-Lemire), 64 bytes
// per step, and an all-ASCII block only checks that the sequence before
// it ended.
TEXT ·indexUTF8AVX2(SB), NOSPLIT, $0-72
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ bits_base+24(FP), DI
	MOVQ st+48(FP), CX
	MOVQ carry+56(FP), R8
	SHRQ $6, DX

	VMOVDQU fuc0f<>(SB), Y15
	VMOVDQU fuidxhi<>(SB), Y14
	VMOVDQU fuidxlo<>(SB), Y13
	VMOVDQU fub1high<>(SB), Y12
	VMOVDQU fub1low<>(SB), Y11
	VMOVDQU fub2high<>(SB), Y10
	VMOVDQU 0(CX), Y9  // the previous 32 bytes
	VMOVDQU 32(CX), Y8 // errors
	VMOVDQU 64(CX), Y7 // the previous block ends inside a sequence

fublock:
	TESTQ DX, DX
	JZ    fudone

	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	IDXHALF(Y0, R9, R10, R11, R12)
	IDXHALF(Y1, AX, BX, CX, R13)
	SHLQ $32, AX
	ORQ  AX, R9  // quotes
	SHLQ $32, BX
	ORQ  BX, R10 // backslashes
	SHLQ $32, CX
	ORQ  CX, R11 // control characters
	SHLQ $32, R13
	ORQ  R13, R12 // not a canonical escape letter

	// Escaped bytes, as indexAVX2.
	MOVQ  R8, CX
	NOTQ  CX
	ANDQ  CX, R10          // B
	LEAQ  (R8)(R10*2), R13 // follows
	MOVQ  R13, CX
	NOTQ  CX
	ANDQ  R10, CX
	ANDQ  fuodd<>(SB), CX  // runs of B starting at an odd position
	ADDQ  R10, CX
	SBBQ  R8, R8
	NEGQ  R8               // carry out: the next block's first byte is escaped
	SHLQ  $1, CX
	XORQ  fueven<>(SB), CX
	ANDQ  R13, CX          // E

	MOVQ CX, R13
	NOTQ R13
	ANDQ R13, R9 // unescaped quotes
	ANDQ CX, R12
	ORQ  R11, R12 // control or escaped non-canonical
	MOVQ R9, (DI)
	MOVQ R12, 8(DI)

	// UTF-8.
	VPOR      Y0, Y1, Y2
	VPMOVMSKB Y2, AX
	TESTL     AX, AX
	JNZ       fumulti
	VPOR      Y7, Y8, Y8 // ASCII: only a sequence left open before it fails
	VPXOR     Y7, Y7, Y7
	VMOVDQU   Y1, Y9
	JMP       funext

fumulti:
	UTF8HALF(Y0, Y9)
	UTF8HALF(Y1, Y0)
	VPSUBUSB fuincomplete<>(SB), Y1, Y7 // the block ends inside a sequence
	VMOVDQU  Y1, Y9

funext:
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ DX
	JMP  fublock

fudone:
	MOVQ    st+48(FP), CX
	VMOVDQU Y9, 0(CX)
	VMOVDQU Y8, 32(CX)
	VMOVDQU Y7, 64(CX)
	VZEROUPPER
	MOVQ    R8, ret+64(FP)
	RET
