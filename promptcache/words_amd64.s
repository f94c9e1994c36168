#include "textflag.h"

// The bytes wordsAVX2 broadcasts: ' ', '\t' (the first of \t \n \v \f \r),
// 4 (the width of that run), 0xc2, 0xfc (the mask of the 0xe0–0xe3 leads)
// and 0xe0.
DATA wordbytes<>+0(SB)/8, $0x0000e0fcc2040920
GLOBL wordbytes<>(SB), RODATA|NOPTR, $8

// func wordsAVX2(b []byte, masks []uint64)
//
// wordsAVX2 classifies the len(b)/64 whole 64-byte blocks of b and writes
// two bitmaps per block k (bit i is byte 64k+i): masks[2k] the bytes that
// are not ASCII spaces (' ', '\t', '\n', '\v', '\f', '\r'; every byte of
// 0x80 or more is in it), masks[2k+1] the bytes 0xc2 and 0xe0–0xe3, the
// lead bytes a space beyond ASCII may start with. len(masks) must be at
// least 2*(len(b)/64).
TEXT ·wordsAVX2(SB), NOSPLIT, $0-48
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ masks_base+24(FP), DI
	SHRQ $6, DX

	VPBROADCASTB wordbytes<>+0(SB), Y15 // ' '
	VPBROADCASTB wordbytes<>+1(SB), Y14 // '\t'
	VPBROADCASTB wordbytes<>+2(SB), Y13 // 4
	VPBROADCASTB wordbytes<>+3(SB), Y12 // 0xc2
	VPBROADCASTB wordbytes<>+4(SB), Y11 // 0xfc
	VPBROADCASTB wordbytes<>+5(SB), Y10 // 0xe0

block:
	TESTQ DX, DX
	JZ    done

	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1

	// Spaces: x == ' ', or x - '\t' ≤ 4 unsigned.
	VPCMPEQB  Y0, Y15, Y2
	VPSUBB    Y14, Y0, Y3
	VPMINUB   Y3, Y13, Y4
	VPCMPEQB  Y3, Y4, Y4
	VPOR      Y4, Y2, Y2
	VPCMPEQB  Y1, Y15, Y5
	VPSUBB    Y14, Y1, Y6
	VPMINUB   Y6, Y13, Y7
	VPCMPEQB  Y6, Y7, Y7
	VPOR      Y7, Y5, Y5
	VPMOVMSKB Y2, R8
	VPMOVMSKB Y5, R9
	SHLQ      $32, R9
	ORQ       R9, R8
	NOTQ      R8
	MOVQ      R8, (DI)

	// Leads: x == 0xc2, or x & 0xfc == 0xe0.
	VPCMPEQB  Y0, Y12, Y2
	VPAND     Y0, Y11, Y3
	VPCMPEQB  Y3, Y10, Y3
	VPOR      Y3, Y2, Y2
	VPCMPEQB  Y1, Y12, Y5
	VPAND     Y1, Y11, Y6
	VPCMPEQB  Y6, Y10, Y6
	VPOR      Y6, Y5, Y5
	VPMOVMSKB Y2, R8
	VPMOVMSKB Y5, R9
	SHLQ      $32, R9
	ORQ       R9, R8
	MOVQ      R8, 8(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ DX
	JMP  block

done:
	VZEROUPPER
	RET
