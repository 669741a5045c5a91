#include "textflag.h"
#include "sum_amd64.h"

// Bandwidth kernels (see kernels_amd64.go). Each turn of a loop handles
// 16 float64 (128 bytes): two 64-byte ZMM registers, four 32-byte YMM
// ones or eight 16-byte XMM ones. Unaligned loads (VMOVUPD, MOVUPD) cost
// nothing extra on aligned data and keep the kernels safe on any slice.
// The products of triad are rounded before the addition (no FMA), as in
// Go and in testdata/bench/stream.c, so all compute the same values.
//
// The store, copy and triad kernels are each written once per
// instruction set, as a macro taking the store instruction (ST) and what
// ends the pass (FENCE): ordinary stores (MOVUPD, VMOVUPD) and nothing,
// or non-temporal ones (MOVNTPD, VMOVNTPD) and SFENCE. A non-temporal
// store sends the line to memory through the write-combining buffers
// without reading it first (no write-allocate) and without evicting the
// caches; its destination must be aligned to the register's width
// (kernels.go aligns it to 64 bytes). The SFENCE makes the stores
// globally visible, and the pass's time cover them, before the function
// returns. Labels are local to a function, so a macro can define them.

#define NOFENCE

// The arguments: func(a *float64, n int, v float64) for store, func(dst,
// src *float64, n int) for copy, func(a, b, c, d *float64, n int) for
// triad; CX counts the turns of the loop.
#define STOREARGS \
	MOVQ a+0(FP), DI; \
	MOVQ n+8(FP), CX; \
	SHRQ $4, CX

#define COPYARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $4, CX

#define TRIADARGS \
	MOVQ a+0(FP), DI; \
	MOVQ b+8(FP), SI; \
	MOVQ c+16(FP), DX; \
	MOVQ d+24(FP), R8; \
	MOVQ n+32(FP), CX; \
	SHRQ $4, CX

// The loop around a kernel's body: OPEN enters it (or skips it when n
// is 0), CLOSE counts the turn and ends the pass with FENCE. ADVANCEn
// moves the kernel's n pointers to the next 128 bytes.
#define OPEN(ARGS) \
	ARGS; \
	TESTQ CX, CX; \
	JZ   done; \
loop:

#define CLOSE(FENCE) \
	DECQ CX; \
	JNZ  loop; \
done: \
	FENCE

#define ADVANCE1 ADDQ $128, DI
#define ADVANCE2 ADDQ $128, SI; ADDQ $128, DI
#define ADVANCE4 ADDQ $128, DI; ADDQ $128, SI; ADDQ $128, DX; ADDQ $128, R8

// SSE2

#define STORESSE2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	MOVSD v+16(FP), X0; \
	UNPCKLPD X0, X0; \
	OPEN(STOREARGS); \
	ST X0, 0(DI); \
	ST X0, 16(DI); \
	ST X0, 32(DI); \
	ST X0, 48(DI); \
	ST X0, 64(DI); \
	ST X0, 80(DI); \
	ST X0, 96(DI); \
	ST X0, 112(DI); \
	ADVANCE1; \
	CLOSE(FENCE); \
	RET

#define COPYSSE2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	OPEN(COPYARGS); \
	MOVUPD 0(SI), X0; \
	MOVUPD 16(SI), X1; \
	MOVUPD 32(SI), X2; \
	MOVUPD 48(SI), X3; \
	MOVUPD 64(SI), X4; \
	MOVUPD 80(SI), X5; \
	MOVUPD 96(SI), X6; \
	MOVUPD 112(SI), X7; \
	ST X0, 0(DI); \
	ST X1, 16(DI); \
	ST X2, 32(DI); \
	ST X3, 48(DI); \
	ST X4, 64(DI); \
	ST X5, 80(DI); \
	ST X6, 96(DI); \
	ST X7, 112(DI); \
	ADVANCE2; \
	CLOSE(FENCE); \
	RET

// Eight registers hold half a turn: two halves of 64 bytes each.
#define TRIADSSE2HALF(ST, off) \
	MOVUPD off+0(DX), X0; \
	MOVUPD off+16(DX), X1; \
	MOVUPD off+32(DX), X2; \
	MOVUPD off+48(DX), X3; \
	MOVUPD off+0(R8), X4; \
	MOVUPD off+16(R8), X5; \
	MOVUPD off+32(R8), X6; \
	MOVUPD off+48(R8), X7; \
	MULPD X4, X0; \
	MULPD X5, X1; \
	MULPD X6, X2; \
	MULPD X7, X3; \
	MOVUPD off+0(SI), X4; \
	MOVUPD off+16(SI), X5; \
	MOVUPD off+32(SI), X6; \
	MOVUPD off+48(SI), X7; \
	ADDPD X4, X0; \
	ADDPD X5, X1; \
	ADDPD X6, X2; \
	ADDPD X7, X3; \
	ST X0, off+0(DI); \
	ST X1, off+16(DI); \
	ST X2, off+32(DI); \
	ST X3, off+48(DI)

#define TRIADSSE2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-40; \
	OPEN(TRIADARGS); \
	TRIADSSE2HALF(ST, 0); \
	TRIADSSE2HALF(ST, 64); \
	ADVANCE4; \
	CLOSE(FENCE); \
	RET

// func loadSSE2(a *float64, n int) float64
TEXT ·loadSSE2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	XORPD X0, X0
	XORPD X1, X1
	XORPD X2, X2
	XORPD X3, X3
	TESTQ CX, CX
	JZ   done

loop:
	SUMSSE2
	DECQ CX
	JNZ  loop

done:
	REDUCESSE2
	MOVSD X0, ret+16(FP)
	RET

// func storeSSE2(a *float64, n int, v float64)
STORESSE2(·storeSSE2, MOVUPD, NOFENCE)

// func ntstoreSSE2(a *float64, n int, v float64)
STORESSE2(·ntstoreSSE2, MOVNTPD, SFENCE)

// func copySSE2(dst, src *float64, n int)
COPYSSE2(·copySSE2, MOVUPD, NOFENCE)

// func copyntSSE2(dst, src *float64, n int)
COPYSSE2(·copyntSSE2, MOVNTPD, SFENCE)

// func triadSSE2(a, b, c, d *float64, n int)
// a[i] = b[i] + c[i]*d[i]
TRIADSSE2(·triadSSE2, MOVUPD, NOFENCE)

// func triadntSSE2(a, b, c, d *float64, n int)
TRIADSSE2(·triadntSSE2, MOVNTPD, SFENCE)

// AVX2: VZEROUPPER after the last YMM instruction, so that SSE code
// after the call pays no transition.

// Two registers' worth of each kernel, Ra at offset oa and Rb at ob:
// with YMM registers twice per turn, with ZMM once.
#define VSTOREPAIR(ST, R, oa, ob) \
	ST R, oa(DI); \
	ST R, ob(DI)

#define VCOPYPAIR(ST, Ra, Rb, oa, ob) \
	VMOVUPD oa(SI), Ra; \
	VMOVUPD ob(SI), Rb; \
	ST Ra, oa(DI); \
	ST Rb, ob(DI)

#define VTRIADPAIR(ST, Ra, Rb, oa, ob) \
	VMOVUPD oa(DX), Ra; \
	VMOVUPD ob(DX), Rb; \
	VMULPD oa(R8), Ra, Ra; \
	VMULPD ob(R8), Rb, Rb; \
	VADDPD oa(SI), Ra, Ra; \
	VADDPD ob(SI), Rb, Rb; \
	ST Ra, oa(DI); \
	ST Rb, ob(DI)

#define STOREAVX2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	VBROADCASTSD v+16(FP), Y0; \
	OPEN(STOREARGS); \
	VSTOREPAIR(ST, Y0, 0, 32); \
	VSTOREPAIR(ST, Y0, 64, 96); \
	ADVANCE1; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

#define COPYAVX2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	OPEN(COPYARGS); \
	VCOPYPAIR(ST, Y0, Y1, 0, 32); \
	VCOPYPAIR(ST, Y2, Y3, 64, 96); \
	ADVANCE2; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

#define TRIADAVX2(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-40; \
	OPEN(TRIADARGS); \
	VTRIADPAIR(ST, Y0, Y1, 0, 32); \
	VTRIADPAIR(ST, Y2, Y3, 64, 96); \
	ADVANCE4; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

// func loadAVX2(a *float64, n int) float64
TEXT ·loadAVX2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JZ   done

loop:
	SUMAVX2
	DECQ CX
	JNZ  loop

done:
	REDUCEAVX2
	MOVSD X0, ret+16(FP)
	RET

// func storeAVX2(a *float64, n int, v float64)
STOREAVX2(·storeAVX2, VMOVUPD, NOFENCE)

// func ntstoreAVX2(a *float64, n int, v float64)
STOREAVX2(·ntstoreAVX2, VMOVNTPD, SFENCE)

// func copyAVX2(dst, src *float64, n int)
COPYAVX2(·copyAVX2, VMOVUPD, NOFENCE)

// func copyntAVX2(dst, src *float64, n int)
COPYAVX2(·copyntAVX2, VMOVNTPD, SFENCE)

// func triadAVX2(a, b, c, d *float64, n int)
TRIADAVX2(·triadAVX2, VMOVUPD, NOFENCE)

// func triadntAVX2(a, b, c, d *float64, n int)
TRIADAVX2(·triadntAVX2, VMOVNTPD, SFENCE)

// AVX-512: two ZMM registers per turn, AVX-512F instructions only
// (VPXORQ rather than AVX512DQ's VXORPD to zero one).

#define STOREAVX512(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	VBROADCASTSD v+16(FP), Z0; \
	OPEN(STOREARGS); \
	VSTOREPAIR(ST, Z0, 0, 64); \
	ADVANCE1; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

#define COPYAVX512(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-24; \
	OPEN(COPYARGS); \
	VCOPYPAIR(ST, Z0, Z1, 0, 64); \
	ADVANCE2; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

#define TRIADAVX512(name, ST, FENCE) \
TEXT name(SB), NOSPLIT, $0-40; \
	OPEN(TRIADARGS); \
	VTRIADPAIR(ST, Z0, Z1, 0, 64); \
	ADVANCE4; \
	CLOSE(FENCE); \
	VZEROUPPER; \
	RET

// func loadAVX512(a *float64, n int) float64
TEXT ·loadAVX512(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	TESTQ CX, CX
	JZ   done

loop:
	VADDPD 0(SI), Z0, Z0
	VADDPD 64(SI), Z1, Z1
	ADDQ $128, SI
	DECQ CX
	JNZ  loop

done:
	VADDPD Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func storeAVX512(a *float64, n int, v float64)
STOREAVX512(·storeAVX512, VMOVUPD, NOFENCE)

// func ntstoreAVX512(a *float64, n int, v float64)
STOREAVX512(·ntstoreAVX512, VMOVNTPD, SFENCE)

// func copyAVX512(dst, src *float64, n int)
COPYAVX512(·copyAVX512, VMOVUPD, NOFENCE)

// func copyntAVX512(dst, src *float64, n int)
COPYAVX512(·copyntAVX512, VMOVNTPD, SFENCE)

// func triadAVX512(a, b, c, d *float64, n int)
TRIADAVX512(·triadAVX512, VMOVUPD, NOFENCE)

// func triadntAVX512(a, b, c, d *float64, n int)
TRIADAVX512(·triadntAVX512, VMOVNTPD, SFENCE)
