#include "textflag.h"
#include "sum_amd64.h"

// The read:write mix (see mix.go): per group, R blocks of 128 bytes summed
// into four accumulators, then W blocks of 128 bytes written with them.
// Unaligned loads and stores, as in kernels_amd64.s.

// func mixAVX2(a *float64, groups, reads, writes int) float64
TEXT ·mixAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ reads+16(FP), R9
	MOVQ writes+24(FP), R10
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JZ   mixavx2done

mixavx2group:
	MOVQ R9, DX
	TESTQ DX, DX
	JZ   mixavx2writes

mixavx2read:
	SUMAVX2
	DECQ DX
	JNZ  mixavx2read

mixavx2writes:
	MOVQ R10, DX
	TESTQ DX, DX
	JZ   mixavx2next

mixavx2write:
	VMOVUPD Y0, 0(SI)
	VMOVUPD Y1, 32(SI)
	VMOVUPD Y2, 64(SI)
	VMOVUPD Y3, 96(SI)
	ADDQ $128, SI
	DECQ DX
	JNZ  mixavx2write

mixavx2next:
	DECQ CX
	JNZ  mixavx2group

mixavx2done:
	REDUCEAVX2
	MOVSD X0, ret+32(FP)
	RET

// func mixSSE2(a *float64, groups, reads, writes int) float64
TEXT ·mixSSE2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ reads+16(FP), R9
	MOVQ writes+24(FP), R10
	XORPD X0, X0
	XORPD X1, X1
	XORPD X2, X2
	XORPD X3, X3
	TESTQ CX, CX
	JZ   mixsse2done

mixsse2group:
	MOVQ R9, DX
	TESTQ DX, DX
	JZ   mixsse2writes

mixsse2read:
	SUMSSE2
	DECQ DX
	JNZ  mixsse2read

mixsse2writes:
	MOVQ R10, DX
	TESTQ DX, DX
	JZ   mixsse2next

mixsse2write:
	MOVUPD X0, 0(SI)
	MOVUPD X1, 16(SI)
	MOVUPD X2, 32(SI)
	MOVUPD X3, 48(SI)
	MOVUPD X0, 64(SI)
	MOVUPD X1, 80(SI)
	MOVUPD X2, 96(SI)
	MOVUPD X3, 112(SI)
	ADDQ $128, SI
	DECQ DX
	JNZ  mixsse2write

mixsse2next:
	DECQ CX
	JNZ  mixsse2group

mixsse2done:
	REDUCESSE2
	MOVSD X0, ret+32(FP)
	RET

// func spin(n int)
TEXT ·spin(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	TESTQ CX, CX
	JLE  spindone

spinloop:
	DECQ CX
	JNZ  spinloop

spindone:
	RET
