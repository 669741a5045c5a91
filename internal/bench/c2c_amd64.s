#include "textflag.h"

// func c2cSpan(w *uint64, mine uint64, n, spins int) (next uint64, done int)
//
// Up to n turns of the core-to-core ping-pong (c2c.go): each a LOCK
// CMPXCHGQ of mine into mine+1 at *w, retried until the other thread's
// write makes *w equal mine, then mine += 2. It returns early, with the
// turns done, when one turn fails spins times in a row, so that the Go
// caller reaches a preemption point (assembly is never preempted).
TEXT ·c2cSpan(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ mine+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ spins+24(FP), R8
	XORQ R9, R9          // turns done
	CMPQ R9, CX
	JGE  c2cdone

c2cturn:
	LEAQ 1(SI), DX
	MOVQ R8, R10         // spins left for this turn

c2ctry:
	MOVQ SI, AX
	LOCK
	CMPXCHGQ DX, (DI)
	JEQ  c2cnext
	DECQ R10
	JNZ  c2ctry
	JMP  c2cdone

c2cnext:
	ADDQ $2, SI
	INCQ R9
	CMPQ R9, CX
	JLT  c2cturn

c2cdone:
	MOVQ SI, next+32(FP)
	MOVQ R9, done+40(FP)
	RET
