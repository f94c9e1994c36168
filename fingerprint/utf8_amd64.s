#include "textflag.h"

// Tables of validUTF8AVX2: the lookup algorithm of Keiser and Lemire,
// "Validating UTF-8 in less than one instruction per byte" (2021), as
// simdjson writes it (utf8_lookup4). Each 16-byte table is repeated for
// the second lane, as VPSHUFB looks up within lanes. Error classes (one
// bit each): 0x01 too short, 0x02 too long, 0x04 overlong 3-byte, 0x08
// too large, 0x10 surrogate, 0x20 overlong 2-byte, 0x40 too large (1000)
// or overlong 4-byte, 0x80 two continuations.
// error classes by the high nibble of the previous byte
DATA utf8b1high<>+0(SB)/8, $0x0202020202020202
DATA utf8b1high<>+8(SB)/8, $0x4915012180808080
DATA utf8b1high<>+16(SB)/8, $0x0202020202020202
DATA utf8b1high<>+24(SB)/8, $0x4915012180808080
GLOBL utf8b1high<>(SB), RODATA|NOPTR, $32
// by its low nibble
DATA utf8b1low<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA utf8b1low<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
DATA utf8b1low<>+16(SB)/8, $0xcbcbcb8b8383a3e7
DATA utf8b1low<>+24(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL utf8b1low<>(SB), RODATA|NOPTR, $32
// by the high nibble of the byte itself
DATA utf8b2high<>+0(SB)/8, $0x0101010101010101
DATA utf8b2high<>+8(SB)/8, $0x01010101babaaee6
DATA utf8b2high<>+16(SB)/8, $0x0101010101010101
DATA utf8b2high<>+24(SB)/8, $0x01010101babaaee6
GLOBL utf8b2high<>(SB), RODATA|NOPTR, $32
// the largest bytes the last three of a block may be without a sequence continuing past it
DATA utf8incomplete<>+0(SB)/8, $0xffffffffffffffff
DATA utf8incomplete<>+8(SB)/8, $0xffffffffffffffff
DATA utf8incomplete<>+16(SB)/8, $0xffffffffffffffff
DATA utf8incomplete<>+24(SB)/8, $0xbfdfefffffffffff
GLOBL utf8incomplete<>(SB), RODATA|NOPTR, $32
// 0x0f (nibble mask), 0xe0-0x80, 0xf0-0x80, 0x80
DATA utf8consts<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA utf8consts<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA utf8consts<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA utf8consts<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA utf8consts<>+32(SB)/8, $0x6060606060606060
DATA utf8consts<>+40(SB)/8, $0x6060606060606060
DATA utf8consts<>+48(SB)/8, $0x6060606060606060
DATA utf8consts<>+56(SB)/8, $0x6060606060606060
DATA utf8consts<>+64(SB)/8, $0x7070707070707070
DATA utf8consts<>+72(SB)/8, $0x7070707070707070
DATA utf8consts<>+80(SB)/8, $0x7070707070707070
DATA utf8consts<>+88(SB)/8, $0x7070707070707070
DATA utf8consts<>+96(SB)/8, $0x8080808080808080
DATA utf8consts<>+104(SB)/8, $0x8080808080808080
DATA utf8consts<>+112(SB)/8, $0x8080808080808080
DATA utf8consts<>+120(SB)/8, $0x8080808080808080
GLOBL utf8consts<>(SB), RODATA|NOPTR, $128

// func validUTF8AVX2(b []byte) bool
//
// validUTF8AVX2 reports whether b is valid UTF-8, exactly as utf8.Valid
// (no overlongs, surrogates or code points above U+10FFFF), 32 bytes at a
// time: every byte's error classes are looked up from the high and low
// nibble of the byte before it and the high nibble of its own, and they
// must be empty except where the byte is required to be the third or
// fourth of a sequence. A block of ASCII only checks that the sequence
// before it ended. The last partial block is copied to the (zeroed) frame
// and checked like the others, so a truncated sequence at the end meets a
// zero byte and fails.
TEXT ·validUTF8AVX2(SB), NOSPLIT, $32-25
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ R8, R8 // 1 once the last block is being checked

	VMOVDQU utf8b1high<>(SB), Y15
	VMOVDQU utf8b1low<>(SB), Y14
	VMOVDQU utf8b2high<>(SB), Y13
	VMOVDQU utf8consts<>+0(SB), Y12  // 0x0f
	VMOVDQU utf8incomplete<>(SB), Y11
	VMOVDQU utf8consts<>+96(SB), Y10 // 0x80
	VPXOR   Y1, Y1, Y1 // the previous block
	VPXOR   Y2, Y2, Y2 // errors
	VPXOR   Y3, Y3, Y3 // the previous block ends inside a sequence

next:
	CMPQ    DX, $32
	JB      last
	VMOVDQU (SI), Y0
	ADDQ    $32, SI
	SUBQ    $32, DX

check:
	VPMOVMSKB Y0, AX
	TESTL     AX, AX
	JNZ       multibyte
	VPOR      Y3, Y2, Y2 // ASCII: only a sequence left open before it fails
	VPXOR     Y3, Y3, Y3
	VMOVDQU   Y0, Y1
	JMP       checked

multibyte:
	// prev1..prev3: the input shifted by one to three bytes, the previous
	// block's last bytes coming in (Y4 = previous high lane : input low lane).
	VPERM2I128 $0x21, Y0, Y1, Y4
	VPALIGNR   $15, Y4, Y0, Y5   // prev1
	VPSRLW     $4, Y5, Y6
	VPAND      Y12, Y6, Y6
	VPSHUFB    Y6, Y15, Y6       // by the previous byte's high nibble
	VPAND      Y12, Y5, Y7
	VPSHUFB    Y7, Y14, Y7       // by its low nibble
	VPAND      Y7, Y6, Y6
	VPSRLW     $4, Y0, Y7
	VPAND      Y12, Y7, Y7
	VPSHUFB    Y7, Y13, Y7       // by this byte's high nibble
	VPAND      Y7, Y6, Y6        // the special cases
	VPALIGNR   $14, Y4, Y0, Y8   // prev2
	VPALIGNR   $13, Y4, Y0, Y9   // prev3
	VPSUBUSB   utf8consts<>+32(SB), Y8, Y8 // >= 0x80 only after 111_____
	VPSUBUSB   utf8consts<>+64(SB), Y9, Y9 // >= 0x80 only after 1111____
	VPOR       Y8, Y9, Y8
	VPAND      Y10, Y8, Y8       // must be a third or fourth byte (0x80)
	VPXOR      Y8, Y6, Y6        // two continuations there is right, all else wrong
	VPOR       Y6, Y2, Y2
	VPSUBUSB   Y11, Y0, Y3       // the block ends inside a sequence
	VMOVDQU    Y0, Y1

checked:
	TESTQ R8, R8
	JZ    next
	VPOR  Y3, Y2, Y2
	VPTEST Y2, Y2
	SETEQ ret+24(FP)
	VZEROUPPER
	RET

last:
	// Copy the DX < 32 bytes left to the zeroed frame and check them as
	// one more block (which may be all zeros).
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, 0(SP)
	XORQ    CX, CX

copy:
	CMPQ CX, DX
	JAE  copied
	MOVB (SI)(CX*1), AX
	MOVB AX, 0(SP)(CX*1)
	INCQ CX
	JMP  copy

copied:
	VMOVDQU 0(SP), Y0
	MOVQ    $1, R8
	JMP     check

// The incomplete-sequence table of validUTF8AVX512: the last three bytes
// of a 64-byte block.
DATA utf8incomplete64<>+0(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+8(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+16(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+24(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+32(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+40(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+48(SB)/8, $0xffffffffffffffff
DATA utf8incomplete64<>+56(SB)/8, $0xbfdfefffffffffff
GLOBL utf8incomplete64<>(SB), RODATA|NOPTR, $64

// func validUTF8AVX512(b []byte) bool
//
// validUTF8AVX512 is validUTF8AVX2 with AVX-512BW, 64 bytes at a time:
// the same lookups (each 16-byte table in all four lanes), the previous
// block's last bytes brought in with VALIGNQ, the last partial block
// copied to the zeroed frame.
TEXT ·validUTF8AVX512(SB), NOSPLIT, $64-25
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ R8, R8 // 1 once the last block is being checked

	VBROADCASTI32X4 utf8b1high<>(SB), Z15
	VBROADCASTI32X4 utf8b1low<>(SB), Z14
	VBROADCASTI32X4 utf8b2high<>(SB), Z13
	VPBROADCASTB    utf8consts<>+0(SB), Z12  // 0x0f
	VMOVDQU64       utf8incomplete64<>(SB), Z11
	VPBROADCASTB    utf8consts<>+96(SB), Z10 // 0x80
	VPBROADCASTB    utf8consts<>+32(SB), Z9  // 0xe0-0x80
	VPBROADCASTB    utf8consts<>+64(SB), Z8  // 0xf0-0x80
	VPXORQ          Z1, Z1, Z1 // the previous block
	VPXORQ          Z2, Z2, Z2 // errors
	VPXORQ          Z3, Z3, Z3 // the previous block ends inside a sequence

next512:
	CMPQ      DX, $64
	JB        last512
	VMOVDQU64 (SI), Z0
	ADDQ      $64, SI
	SUBQ      $64, DX

check512:
	VPMOVB2M  Z0, K1
	KORTESTQ  K1, K1
	JNZ       multibyte512
	VPORQ     Z3, Z2, Z2 // ASCII: only a sequence left open before it fails
	VPXORQ    Z3, Z3, Z3
	VMOVDQA64 Z0, Z1
	JMP       checked512

multibyte512:
	// Z4 = the previous block's last lane : this block's first three.
	VALIGNQ  $6, Z1, Z0, Z4
	VPALIGNR $15, Z4, Z0, Z5 // prev1
	VPSRLW   $4, Z5, Z6
	VPANDQ   Z12, Z6, Z6
	VPSHUFB  Z6, Z15, Z6     // by the previous byte's high nibble
	VPANDQ   Z12, Z5, Z7
	VPSHUFB  Z7, Z14, Z7     // by its low nibble
	VPANDQ   Z7, Z6, Z6
	VPSRLW   $4, Z0, Z7
	VPANDQ   Z12, Z7, Z7
	VPSHUFB  Z7, Z13, Z7     // by this byte's high nibble
	VPANDQ   Z7, Z6, Z6      // the special cases
	VPALIGNR $14, Z4, Z0, Z16 // prev2
	VPALIGNR $13, Z4, Z0, Z17 // prev3
	VPSUBUSB Z9, Z16, Z16    // >= 0x80 only after 111_____
	VPSUBUSB Z8, Z17, Z17    // >= 0x80 only after 1111____
	VPORQ    Z16, Z17, Z16
	VPANDQ   Z10, Z16, Z16   // must be a third or fourth byte (0x80)
	VPXORQ   Z16, Z6, Z6     // two continuations there is right, all else wrong
	VPORQ    Z6, Z2, Z2
	VPSUBUSB Z11, Z0, Z3     // the block ends inside a sequence
	VMOVDQA64 Z0, Z1

checked512:
	TESTQ    R8, R8
	JZ       next512
	VPORQ    Z3, Z2, Z2
	VPTESTMQ Z2, Z2, K2
	KORTESTB K2, K2
	SETEQ    ret+24(FP)
	VZEROUPPER
	RET

last512:
	// Copy the DX < 64 bytes left to the zeroed frame and check them as
	// one more block (which may be all zeros).
	VPXORQ    Z0, Z0, Z0
	VMOVDQU64 Z0, 0(SP)
	XORQ      CX, CX

copy512:
	CMPQ CX, DX
	JAE  copied512
	MOVB (SI)(CX*1), AX
	MOVB AX, 0(SP)(CX*1)
	INCQ CX
	JMP  copy512

copied512:
	VMOVDQU64 0(SP), Z0
	MOVQ      $1, R8
	JMP       check512
