#include "textflag.h"

// Bandwidth kernels (see kernels_amd64.go). Each turn of a loop handles
// 16 float64 (128 bytes): four 32-byte YMM registers, or eight 16-byte
// XMM ones. Unaligned loads and stores (VMOVUPD, MOVUPD) cost nothing
// extra on aligned data and keep the kernels safe on any slice. The
// products of triad are rounded before the addition (no FMA), as in Go
// and in testdata/bench/stream.c, so all three compute the same values.

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
	JZ   loadavx2done

loadavx2loop:
	VADDPD 0(SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VADDPD 64(SI), Y2, Y2
	VADDPD 96(SI), Y3, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ  loadavx2loop

loadavx2done:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func copyAVX2(dst, src *float64, n int)
TEXT ·copyAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copyavx2done

copyavx2loop:
	VMOVUPD 0(SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copyavx2loop

copyavx2done:
	VZEROUPPER
	RET

// func triadAVX2(a, b, c, d *float64, n int)
// a[i] = b[i] + c[i]*d[i]
TEXT ·triadAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   triadavx2done

triadavx2loop:
	VMOVUPD 0(DX), Y0
	VMOVUPD 32(DX), Y1
	VMOVUPD 64(DX), Y2
	VMOVUPD 96(DX), Y3
	VMULPD 0(R8), Y0, Y0
	VMULPD 32(R8), Y1, Y1
	VMULPD 64(R8), Y2, Y2
	VMULPD 96(R8), Y3, Y3
	VADDPD 0(SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VADDPD 64(SI), Y2, Y2
	VADDPD 96(SI), Y3, Y3
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, R8
	DECQ CX
	JNZ  triadavx2loop

triadavx2done:
	VZEROUPPER
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
	JZ   loadsse2done

loadsse2loop:
	MOVUPD 0(SI), X4
	MOVUPD 16(SI), X5
	MOVUPD 32(SI), X6
	MOVUPD 48(SI), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	MOVUPD 64(SI), X4
	MOVUPD 80(SI), X5
	MOVUPD 96(SI), X6
	MOVUPD 112(SI), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	ADDQ $128, SI
	DECQ CX
	JNZ  loadsse2loop

loadsse2done:
	ADDPD X1, X0
	ADDPD X3, X2
	ADDPD X2, X0
	MOVAPD X0, X1
	UNPCKHPD X1, X1
	ADDSD X1, X0
	MOVSD X0, ret+16(FP)
	RET

// func copySSE2(dst, src *float64, n int)
TEXT ·copySSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copysse2done

copysse2loop:
	MOVUPD 0(SI), X0
	MOVUPD 16(SI), X1
	MOVUPD 32(SI), X2
	MOVUPD 48(SI), X3
	MOVUPD 64(SI), X4
	MOVUPD 80(SI), X5
	MOVUPD 96(SI), X6
	MOVUPD 112(SI), X7
	MOVUPD X0, 0(DI)
	MOVUPD X1, 16(DI)
	MOVUPD X2, 32(DI)
	MOVUPD X3, 48(DI)
	MOVUPD X4, 64(DI)
	MOVUPD X5, 80(DI)
	MOVUPD X6, 96(DI)
	MOVUPD X7, 112(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copysse2loop

copysse2done:
	RET

// func triadSSE2(a, b, c, d *float64, n int)
TEXT ·triadSSE2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   triadsse2done

triadsse2loop:
	MOVUPD 0(DX), X0
	MOVUPD 16(DX), X1
	MOVUPD 32(DX), X2
	MOVUPD 48(DX), X3
	MOVUPD 0(R8), X4
	MOVUPD 16(R8), X5
	MOVUPD 32(R8), X6
	MOVUPD 48(R8), X7
	MULPD X4, X0
	MULPD X5, X1
	MULPD X6, X2
	MULPD X7, X3
	MOVUPD 0(SI), X4
	MOVUPD 16(SI), X5
	MOVUPD 32(SI), X6
	MOVUPD 48(SI), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	MOVUPD X0, 0(DI)
	MOVUPD X1, 16(DI)
	MOVUPD X2, 32(DI)
	MOVUPD X3, 48(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R8
	DECQ CX
	JNZ  triadsse2loop

triadsse2done:
	RET

// The store kernels write v to every element, the non-temporal ones
// (nt*) with streaming stores (MOVNTPD, VMOVNTPD): the line goes to
// memory through the write-combining buffers without being read first
// (no write-allocate) and without evicting the caches. Their
// destination must be aligned to the register's width (kernels.go
// aligns it to 64 bytes). An SFENCE ends each pass, so that the stores
// are globally visible, and the pass's time covers them, when the
// function returns.

// func storeSSE2(a *float64, n int, v float64)
TEXT ·storeSSE2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	MOVSD v+16(FP), X0
	UNPCKLPD X0, X0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   storesse2done

storesse2loop:
	MOVUPD X0, 0(DI)
	MOVUPD X0, 16(DI)
	MOVUPD X0, 32(DI)
	MOVUPD X0, 48(DI)
	MOVUPD X0, 64(DI)
	MOVUPD X0, 80(DI)
	MOVUPD X0, 96(DI)
	MOVUPD X0, 112(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  storesse2loop

storesse2done:
	RET

// func ntstoreSSE2(a *float64, n int, v float64)
TEXT ·ntstoreSSE2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	MOVSD v+16(FP), X0
	UNPCKLPD X0, X0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   ntstoresse2done

ntstoresse2loop:
	MOVNTPD X0, 0(DI)
	MOVNTPD X0, 16(DI)
	MOVNTPD X0, 32(DI)
	MOVNTPD X0, 48(DI)
	MOVNTPD X0, 64(DI)
	MOVNTPD X0, 80(DI)
	MOVNTPD X0, 96(DI)
	MOVNTPD X0, 112(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  ntstoresse2loop

ntstoresse2done:
	SFENCE
	RET

// func copyntSSE2(dst, src *float64, n int)
TEXT ·copyntSSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copyntsse2done

copyntsse2loop:
	MOVUPD 0(SI), X0
	MOVUPD 16(SI), X1
	MOVUPD 32(SI), X2
	MOVUPD 48(SI), X3
	MOVUPD 64(SI), X4
	MOVUPD 80(SI), X5
	MOVUPD 96(SI), X6
	MOVUPD 112(SI), X7
	MOVNTPD X0, 0(DI)
	MOVNTPD X1, 16(DI)
	MOVNTPD X2, 32(DI)
	MOVNTPD X3, 48(DI)
	MOVNTPD X4, 64(DI)
	MOVNTPD X5, 80(DI)
	MOVNTPD X6, 96(DI)
	MOVNTPD X7, 112(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copyntsse2loop

copyntsse2done:
	SFENCE
	RET

// func triadntSSE2(a, b, c, d *float64, n int)
TEXT ·triadntSSE2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   triadntsse2done

triadntsse2loop:
	MOVUPD 0(DX), X0
	MOVUPD 16(DX), X1
	MOVUPD 32(DX), X2
	MOVUPD 48(DX), X3
	MOVUPD 0(R8), X4
	MOVUPD 16(R8), X5
	MOVUPD 32(R8), X6
	MOVUPD 48(R8), X7
	MULPD X4, X0
	MULPD X5, X1
	MULPD X6, X2
	MULPD X7, X3
	MOVUPD 0(SI), X4
	MOVUPD 16(SI), X5
	MOVUPD 32(SI), X6
	MOVUPD 48(SI), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	MOVNTPD X0, 0(DI)
	MOVNTPD X1, 16(DI)
	MOVNTPD X2, 32(DI)
	MOVNTPD X3, 48(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R8
	DECQ CX
	JNZ  triadntsse2loop

triadntsse2done:
	SFENCE
	RET

// func storeAVX2(a *float64, n int, v float64)
TEXT ·storeAVX2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSD v+16(FP), Y0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   storeavx2done

storeavx2loop:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y0, 32(DI)
	VMOVUPD Y0, 64(DI)
	VMOVUPD Y0, 96(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  storeavx2loop

storeavx2done:
	VZEROUPPER
	RET

// func ntstoreAVX2(a *float64, n int, v float64)
TEXT ·ntstoreAVX2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSD v+16(FP), Y0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   ntstoreavx2done

ntstoreavx2loop:
	VMOVNTPD Y0, 0(DI)
	VMOVNTPD Y0, 32(DI)
	VMOVNTPD Y0, 64(DI)
	VMOVNTPD Y0, 96(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  ntstoreavx2loop

ntstoreavx2done:
	SFENCE
	VZEROUPPER
	RET

// func copyntAVX2(dst, src *float64, n int)
TEXT ·copyntAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copyntavx2done

copyntavx2loop:
	VMOVUPD 0(SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VMOVNTPD Y0, 0(DI)
	VMOVNTPD Y1, 32(DI)
	VMOVNTPD Y2, 64(DI)
	VMOVNTPD Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copyntavx2loop

copyntavx2done:
	SFENCE
	VZEROUPPER
	RET

// func triadntAVX2(a, b, c, d *float64, n int)
TEXT ·triadntAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   triadntavx2done

triadntavx2loop:
	VMOVUPD 0(DX), Y0
	VMOVUPD 32(DX), Y1
	VMOVUPD 64(DX), Y2
	VMOVUPD 96(DX), Y3
	VMULPD 0(R8), Y0, Y0
	VMULPD 32(R8), Y1, Y1
	VMULPD 64(R8), Y2, Y2
	VMULPD 96(R8), Y3, Y3
	VADDPD 0(SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VADDPD 64(SI), Y2, Y2
	VADDPD 96(SI), Y3, Y3
	VMOVNTPD Y0, 0(DI)
	VMOVNTPD Y1, 32(DI)
	VMOVNTPD Y2, 64(DI)
	VMOVNTPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, R8
	DECQ CX
	JNZ  triadntavx2loop

triadntavx2done:
	SFENCE
	VZEROUPPER
	RET

// The AVX-512 kernels: two 64-byte ZMM registers per turn of the loop
// (16 float64, the same block as the others). Only AVX-512F
// instructions (VPXORQ rather than AVX512DQ's VXORPD for the zeroing).

// func loadAVX512(a *float64, n int) float64
TEXT ·loadAVX512(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	TESTQ CX, CX
	JZ   loadavx512done

loadavx512loop:
	VADDPD 0(SI), Z0, Z0
	VADDPD 64(SI), Z1, Z1
	ADDQ $128, SI
	DECQ CX
	JNZ  loadavx512loop

loadavx512done:
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
TEXT ·storeAVX512(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSD v+16(FP), Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   storeavx512done

storeavx512loop:
	VMOVUPD Z0, 0(DI)
	VMOVUPD Z0, 64(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  storeavx512loop

storeavx512done:
	VZEROUPPER
	RET

// func copyAVX512(dst, src *float64, n int)
TEXT ·copyAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copyavx512done

copyavx512loop:
	VMOVUPD 0(SI), Z0
	VMOVUPD 64(SI), Z1
	VMOVUPD Z0, 0(DI)
	VMOVUPD Z1, 64(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copyavx512loop

copyavx512done:
	VZEROUPPER
	RET

// func triadAVX512(a, b, c, d *float64, n int)
TEXT ·triadAVX512(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   triadavx512done

triadavx512loop:
	VMOVUPD 0(DX), Z0
	VMOVUPD 64(DX), Z1
	VMULPD 0(R8), Z0, Z0
	VMULPD 64(R8), Z1, Z1
	VADDPD 0(SI), Z0, Z0
	VADDPD 64(SI), Z1, Z1
	VMOVUPD Z0, 0(DI)
	VMOVUPD Z1, 64(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, R8
	DECQ CX
	JNZ  triadavx512loop

triadavx512done:
	VZEROUPPER
	RET

// func ntstoreAVX512(a *float64, n int, v float64)
TEXT ·ntstoreAVX512(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSD v+16(FP), Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   ntstoreavx512done

ntstoreavx512loop:
	VMOVNTPD Z0, 0(DI)
	VMOVNTPD Z0, 64(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  ntstoreavx512loop

ntstoreavx512done:
	SFENCE
	VZEROUPPER
	RET

// func copyntAVX512(dst, src *float64, n int)
TEXT ·copyntAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   copyntavx512done

copyntavx512loop:
	VMOVUPD 0(SI), Z0
	VMOVUPD 64(SI), Z1
	VMOVNTPD Z0, 0(DI)
	VMOVNTPD Z1, 64(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copyntavx512loop

copyntavx512done:
	SFENCE
	VZEROUPPER
	RET

// func triadntAVX512(a, b, c, d *float64, n int)
TEXT ·triadntAVX512(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   triadntavx512done

triadntavx512loop:
	VMOVUPD 0(DX), Z0
	VMOVUPD 64(DX), Z1
	VMULPD 0(R8), Z0, Z0
	VMULPD 64(R8), Z1, Z1
	VADDPD 0(SI), Z0, Z0
	VADDPD 64(SI), Z1, Z1
	VMOVNTPD Z0, 0(DI)
	VMOVNTPD Z1, 64(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, R8
	DECQ CX
	JNZ  triadntavx512loop

triadntavx512done:
	SFENCE
	VZEROUPPER
	RET
