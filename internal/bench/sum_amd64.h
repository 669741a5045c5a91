// The read side shared by the load kernels (kernels_amd64.s) and the
// read:write mixes (mix_amd64.s): one 128-byte block at SI summed into four
// accumulators, SI moved past it, and the accumulators reduced to one
// double in X0.

// SUMSSE2 adds the block into X0-X3 (X4-X7 scratch).
#define SUMSSE2 \
	MOVUPD 0(SI), X4; \
	MOVUPD 16(SI), X5; \
	MOVUPD 32(SI), X6; \
	MOVUPD 48(SI), X7; \
	ADDPD X4, X0; \
	ADDPD X5, X1; \
	ADDPD X6, X2; \
	ADDPD X7, X3; \
	MOVUPD 64(SI), X4; \
	MOVUPD 80(SI), X5; \
	MOVUPD 96(SI), X6; \
	MOVUPD 112(SI), X7; \
	ADDPD X4, X0; \
	ADDPD X5, X1; \
	ADDPD X6, X2; \
	ADDPD X7, X3; \
	ADDQ $128, SI

// REDUCESSE2 leaves X0+X1+X2+X3, both lanes, in the low double of X0.
#define REDUCESSE2 \
	ADDPD X1, X0; \
	ADDPD X3, X2; \
	ADDPD X2, X0; \
	MOVAPD X0, X1; \
	UNPCKHPD X1, X1; \
	ADDSD X1, X0

// SUMAVX2 adds the block into Y0-Y3.
#define SUMAVX2 \
	VADDPD 0(SI), Y0, Y0; \
	VADDPD 32(SI), Y1, Y1; \
	VADDPD 64(SI), Y2, Y2; \
	VADDPD 96(SI), Y3, Y3; \
	ADDQ $128, SI

// REDUCEAVX2 leaves Y0+Y1+Y2+Y3, every lane, in the low double of X0, and
// clears the upper halves.
#define REDUCEAVX2 \
	VADDPD Y1, Y0, Y0; \
	VADDPD Y3, Y2, Y2; \
	VADDPD Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD X1, X0, X0; \
	VHADDPD X0, X0, X0; \
	VZEROUPPER
