#include "textflag.h"

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
	VADDPD 0(SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VADDPD 64(SI), Y2, Y2
	VADDPD 96(SI), Y3, Y3
	ADDQ $128, SI
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
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VZEROUPPER
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
	ADDPD X1, X0
	ADDPD X3, X2
	ADDPD X2, X0
	MOVAPD X0, X1
	UNPCKHPD X1, X1
	ADDSD X1, X0
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
