#include "textflag.h"

// Tables of indexUTF8AVX512: the same as those of indexAVX512 and
// validUTF8AVX512 (index_amd64.s, utf8_amd64.s), which are local to their
// files. 16-byte tables are broadcast to the four lanes.
DATA f5b1high<>+0(SB)/8, $0x0202020202020202
DATA f5b1high<>+8(SB)/8, $0x4915012180808080
GLOBL f5b1high<>(SB), RODATA|NOPTR, $16
DATA f5b1low<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA f5b1low<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL f5b1low<>(SB), RODATA|NOPTR, $16
DATA f5b2high<>+0(SB)/8, $0x0101010101010101
DATA f5b2high<>+8(SB)/8, $0x01010101babaaee6
GLOBL f5b2high<>(SB), RODATA|NOPTR, $16
DATA f5idxhi<>+0(SB)/8, $0x0804020000010000
DATA f5idxhi<>+8(SB)/8, $0x0000000000000000
GLOBL f5idxhi<>(SB), RODATA|NOPTR, $16
DATA f5idxlo<>+0(SB)/8, $0x00040008000d0000
DATA f5idxlo<>+8(SB)/8, $0x0004000200000000
GLOBL f5idxlo<>(SB), RODATA|NOPTR, $16
DATA f5incomplete<>+0(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+8(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+16(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+24(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+32(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+40(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+48(SB)/8, $0xffffffffffffffff
DATA f5incomplete<>+56(SB)/8, $0xbfdfefffffffffff
GLOBL f5incomplete<>(SB), RODATA|NOPTR, $64
// '"', '\\', 0x1f, 0x0f, 0x80, 0xe0-0x80, 0xf0-0x80
DATA f5bytes<>+0(SB)/8, $0x007060800f1f5c22
GLOBL f5bytes<>(SB), RODATA|NOPTR, $8

// func indexUTF8AVX512(b []byte, bits []uint64) bool
//
// indexUTF8AVX512 is indexAVX512 over all of b (its len(b)/64 whole blocks
// and then the rest, zero-padded to one more block, with the escape carry
// going across) and validUTF8AVX512 over b, in one loop that loads each
// 64-byte block once: bits gets len(b)/64+1 pairs of bitmaps, exactly
// those of buildIndex, and the result is utf8.Valid(b).
TEXT ·indexUTF8AVX512(SB), NOSPLIT, $64-49
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ bits_base+24(FP), DI
	XORQ R8, R8 // the escape carry

	VPBROADCASTB    f5bytes<>+0(SB), Z31 // '"'
	VPBROADCASTB    f5bytes<>+1(SB), Z30 // '\\'
	VPBROADCASTB    f5bytes<>+2(SB), Z29 // 0x1f
	VPBROADCASTB    f5bytes<>+3(SB), Z28 // 0x0f
	VBROADCASTI32X4 f5idxhi<>(SB), Z27
	VBROADCASTI32X4 f5idxlo<>(SB), Z26
	VBROADCASTI32X4 f5b1high<>(SB), Z15
	VBROADCASTI32X4 f5b1low<>(SB), Z14
	VBROADCASTI32X4 f5b2high<>(SB), Z13
	VMOVDQU64       f5incomplete<>(SB), Z11
	VPBROADCASTB    f5bytes<>+4(SB), Z10 // 0x80
	VPBROADCASTB    f5bytes<>+5(SB), Z9  // 0xe0-0x80
	VPBROADCASTB    f5bytes<>+6(SB), Z8  // 0xf0-0x80
	MOVQ            $0x5555555555555555, BX // even bits
	MOVQ            $0xaaaaaaaaaaaaaaaa, AX // odd bits
	VPXORQ          Z1, Z1, Z1 // the previous block
	VPXORQ          Z2, Z2, Z2 // UTF-8 errors
	VPXORQ          Z3, Z3, Z3 // the previous block ends inside a sequence

nextf5:
	CMPQ      DX, $64
	JB        lastf5
	VMOVDQU64 (SI), Z0
	ADDQ      $64, SI
	SUBQ      $64, DX

blockf5:
	// The string index of the block (indexAVX512).
	VPCMPEQB  Z31, Z0, K1
	VPCMPEQB  Z30, Z0, K2
	VPCMPUB   $2, Z29, Z0, K3 // <= 0x1f
	VPSRLW    $4, Z0, Z24
	VPANDQ    Z28, Z24, Z24
	VPSHUFB   Z24, Z27, Z24
	VPANDQ    Z28, Z0, Z25
	VPSHUFB   Z25, Z26, Z25
	VPTESTNMB Z25, Z24, K4 // not a canonical escape letter
	KMOVQ     K1, R9       // quotes
	KMOVQ     K2, R10      // backslashes
	KMOVQ     K3, R11      // control characters
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
	ADDQ $16, DI

	// The UTF-8 check of the block (validUTF8AVX512).
	VPMOVB2M  Z0, K5
	KORTESTQ  K5, K5
	JNZ       multif5
	VPORQ     Z3, Z2, Z2 // ASCII: only a sequence left open before it fails
	VPXORQ    Z3, Z3, Z3
	VMOVDQA64 Z0, Z1
	JMP       checkedf5

multif5:
	VALIGNQ   $6, Z1, Z0, Z4
	VPALIGNR  $15, Z4, Z0, Z5 // prev1
	VPSRLW    $4, Z5, Z6
	VPANDQ    Z28, Z6, Z6
	VPSHUFB   Z6, Z15, Z6     // by the previous byte's high nibble
	VPANDQ    Z28, Z5, Z7
	VPSHUFB   Z7, Z14, Z7     // by its low nibble
	VPANDQ    Z7, Z6, Z6
	VPSRLW    $4, Z0, Z7
	VPANDQ    Z28, Z7, Z7
	VPSHUFB   Z7, Z13, Z7     // by this byte's high nibble
	VPANDQ    Z7, Z6, Z6      // the special cases
	VPALIGNR  $14, Z4, Z0, Z16 // prev2
	VPALIGNR  $13, Z4, Z0, Z17 // prev3
	VPSUBUSB  Z9, Z16, Z16    // >= 0x80 only after 111_____
	VPSUBUSB  Z8, Z17, Z17    // >= 0x80 only after 1111____
	VPORQ     Z16, Z17, Z16
	VPANDQ    Z10, Z16, Z16   // must be a third or fourth byte (0x80)
	VPXORQ    Z16, Z6, Z6     // two continuations there is right, all else wrong
	VPORQ     Z6, Z2, Z2
	VPSUBUSB  Z11, Z0, Z3     // the block ends inside a sequence
	VMOVDQA64 Z0, Z1

checkedf5:
	CMPQ     DX, $0
	JGE      nextf5
	VPORQ    Z3, Z2, Z2
	VPTESTMQ Z2, Z2, K2
	KORTESTB K2, K2
	SETEQ    ret+48(FP)
	VZEROUPPER
	RET

lastf5:
	// Copy the DX < 64 bytes left to the zeroed frame and treat them as
	// one more block (which may be all zeros); DX < 0 then marks it as
	// the last.
	VPXORQ    Z0, Z0, Z0
	VMOVDQU64 Z0, 0(SP)
	XORQ      CX, CX

copyf5:
	CMPQ CX, DX
	JAE  copiedf5
	MOVB (SI)(CX*1), R9
	MOVB R9, 0(SP)(CX*1)
	INCQ CX
	JMP  copyf5

copiedf5:
	VMOVDQU64 0(SP), Z0
	MOVQ      $-1, DX
	JMP       blockf5
