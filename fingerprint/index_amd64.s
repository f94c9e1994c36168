#include "textflag.h"

// The bytes indexAVX2 broadcasts: '"', '\\', 0x1f (the largest control
// character) and 0x0f (the nibble mask).
DATA idxbytes<>+0(SB)/4, $0x0f1f5c22
GLOBL idxbytes<>(SB), RODATA|NOPTR, $4

// The canonical escape letters " \ b f n r t, looked up by nibble: a byte
// is one iff idxhi[its high nibble] & idxlo[its low nibble] != 0. Bits:
// 0x01 high nibble 2 ('"'), 0x02 high 5 ('\\'), 0x04 high 6 ('b' 'f' 'n'),
// 0x08 high 7 ('r' 't'). Each 16-byte table is repeated for the second
// lane (VPSHUFB looks up within lanes).
DATA idxhi<>+0(SB)/8, $0x0804020000010000
DATA idxhi<>+8(SB)/8, $0x0000000000000000
DATA idxhi<>+16(SB)/8, $0x0804020000010000
DATA idxhi<>+24(SB)/8, $0x0000000000000000
GLOBL idxhi<>(SB), RODATA|NOPTR, $32
DATA idxlo<>+0(SB)/8, $0x00040008000d0000
DATA idxlo<>+8(SB)/8, $0x0004000200000000
DATA idxlo<>+16(SB)/8, $0x00040008000d0000
DATA idxlo<>+24(SB)/8, $0x0004000200000000
GLOBL idxlo<>(SB), RODATA|NOPTR, $32

// func indexAVX2(b []byte, bits []uint64, carry uint64) uint64
//
// indexAVX2 classifies the len(b)/64 whole 64-byte blocks of b and writes
// two bitmaps per block k (bit i is byte 64k+i): bits[2k] the quotes that
// are not escaped, bits[2k+1] the bytes a string may not hold as they are
// (control characters, and escaped bytes that are not the second byte of a
// canonical escape \" \\ \b \f \n \r \t: the '/' of \/, the 'u' of \u, or
// an invalid escape). A byte is escaped iff an odd run of backslashes ends
// right before it (simdjson's find_escaped_branchless, one add and its
// carry per block). carry is 1 iff b[0] is escaped (the previous chunk
// ended in an odd run); the result is the same for the byte after the last
// block. len(bits) must be at least 2*(len(b)/64).
TEXT ·indexAVX2(SB), NOSPLIT, $0-64
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ bits_base+24(FP), DI
	MOVQ carry+48(FP), R8
	SHRQ $6, DX

	VPBROADCASTB idxbytes<>+0(SB), Y15 // '"'
	VPBROADCASTB idxbytes<>+1(SB), Y14 // '\\'
	VPBROADCASTB idxbytes<>+2(SB), Y13 // 0x1f
	VPBROADCASTB idxbytes<>+3(SB), Y12 // 0x0f
	VMOVDQU      idxhi<>(SB), Y11
	VMOVDQU      idxlo<>(SB), Y10
	VPXOR        Y9, Y9, Y9
	MOVQ         $0x5555555555555555, BX // even bits
	MOVQ         $0xaaaaaaaaaaaaaaaa, AX // odd bits

block:
	TESTQ DX, DX
	JZ    done

	VMOVDQU   (SI), Y0
	VMOVDQU   32(SI), Y1
	VPCMPEQB  Y0, Y15, Y2
	VPCMPEQB  Y1, Y15, Y3
	VPMOVMSKB Y2, R9
	VPMOVMSKB Y3, R10
	SHLQ      $32, R10
	ORQ       R10, R9 // quotes
	VPCMPEQB  Y0, Y14, Y2
	VPCMPEQB  Y1, Y14, Y3
	VPMOVMSKB Y2, R10
	VPMOVMSKB Y3, R11
	SHLQ      $32, R11
	ORQ       R11, R10 // backslashes
	VPMINUB   Y0, Y13, Y2
	VPCMPEQB  Y0, Y2, Y2
	VPMINUB   Y1, Y13, Y3
	VPCMPEQB  Y1, Y3, Y3
	VPMOVMSKB Y2, R11
	VPMOVMSKB Y3, R12
	SHLQ      $32, R12
	ORQ       R12, R11 // control characters
	VPSRLW    $4, Y0, Y2
	VPAND     Y12, Y2, Y2
	VPSHUFB   Y2, Y11, Y2
	VPAND     Y12, Y0, Y4
	VPSHUFB   Y4, Y10, Y4
	VPAND     Y4, Y2, Y2
	VPCMPEQB  Y9, Y2, Y2
	VPSRLW    $4, Y1, Y3
	VPAND     Y12, Y3, Y3
	VPSHUFB   Y3, Y11, Y3
	VPAND     Y12, Y1, Y5
	VPSHUFB   Y5, Y10, Y5
	VPAND     Y5, Y3, Y3
	VPCMPEQB  Y9, Y3, Y3
	VPMOVMSKB Y2, R12
	VPMOVMSKB Y3, R13
	SHLQ      $32, R13
	ORQ       R13, R12 // not a canonical escape letter

	// Escaped bytes E: B = the backslashes not escaped themselves by the
	// carry, follows = B<<1 | carry; adding the starts of the runs at odd
	// positions to B flips the parity of those runs, so the sum shifted
	// left, xor the even bits, picks the bytes after odd runs.
	MOVQ  R8, CX
	NOTQ  CX
	ANDQ  CX, R10          // B
	LEAQ  (R8)(R10*2), R13 // follows
	MOVQ  R13, CX
	NOTQ  CX
	ANDQ  R10, CX
	ANDQ  AX, CX           // runs of B starting at an odd position
	ADDQ  R10, CX
	SBBQ  R8, R8
	NEGQ  R8               // carry out: the next block's first byte is escaped
	SHLQ  $1, CX
	XORQ  BX, CX
	ANDQ  R13, CX          // E

	MOVQ CX, R13
	NOTQ R13
	ANDQ R13, R9           // unescaped quotes
	ANDQ CX, R12
	ORQ  R11, R12          // control or escaped non-canonical
	MOVQ R9, (DI)
	MOVQ R12, 8(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ DX
	JMP  block

done:
	VZEROUPPER
	MOVQ R8, ret+56(FP)
	RET

// func indexAVX512(b []byte, bits []uint64, carry uint64) uint64
//
// indexAVX512 is indexAVX2 with AVX-512BW: a whole 64-byte block per
// compare, straight into mask registers. Same contract, same bitmaps.
TEXT ·indexAVX512(SB), NOSPLIT, $0-64
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ bits_base+24(FP), DI
	MOVQ carry+48(FP), R8
	SHRQ $6, DX

	VPBROADCASTB    idxbytes<>+0(SB), Z15 // '"'
	VPBROADCASTB    idxbytes<>+1(SB), Z14 // '\\'
	VPBROADCASTB    idxbytes<>+2(SB), Z13 // 0x1f
	VPBROADCASTB    idxbytes<>+3(SB), Z12 // 0x0f
	VBROADCASTI32X4 idxhi<>(SB), Z11
	VBROADCASTI32X4 idxlo<>(SB), Z10
	MOVQ            $0x5555555555555555, BX // even bits
	MOVQ            $0xaaaaaaaaaaaaaaaa, AX // odd bits

block512:
	TESTQ DX, DX
	JZ    done512

	VMOVDQU64 (SI), Z0
	VPCMPEQB  Z15, Z0, K1
	VPCMPEQB  Z14, Z0, K2
	VPCMPUB   $2, Z13, Z0, K3 // <= 0x1f
	VPSRLW    $4, Z0, Z1
	VPANDQ    Z12, Z1, Z1
	VPSHUFB   Z1, Z11, Z1
	VPANDQ    Z12, Z0, Z2
	VPSHUFB   Z2, Z10, Z2
	VPTESTNMB Z2, Z1, K4      // not a canonical escape letter
	KMOVQ     K1, R9          // quotes
	KMOVQ     K2, R10         // backslashes
	KMOVQ     K3, R11         // control characters
	KMOVQ     K4, R12

	MOVQ  R8, CX
	NOTQ  CX
	ANDQ  CX, R10          // B
	LEAQ  (R8)(R10*2), R13 // follows
	MOVQ  R13, CX
	NOTQ  CX
	ANDQ  R10, CX
	ANDQ  AX, CX           // runs of B starting at an odd position
	ADDQ  R10, CX
	SBBQ  R8, R8
	NEGQ  R8               // carry out
	SHLQ  $1, CX
	XORQ  BX, CX
	ANDQ  R13, CX          // E

	MOVQ CX, R13
	NOTQ R13
	ANDQ R13, R9
	ANDQ CX, R12
	ORQ  R11, R12
	MOVQ R9, (DI)
	MOVQ R12, 8(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ DX
	JMP  block512

done512:
	VZEROUPPER
	MOVQ R8, ret+56(FP)
	RET
