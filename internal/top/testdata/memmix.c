// memmix: a process with a known memory mix, the workload of
// TestMemoryMatchesNumastat (internal/top), which compares numascope top's
// memory per node and category with numactl's numastat -p.
//
//   memmix HEAP_MIB STACK_MIB ANON_MIB HUGE_BYTES
//
// It fills a brk heap (malloc, mmap disabled so that it all lands in
// [heap]), the main thread's stack, an anonymous private mapping (with
// transparent huge pages asked for, which numa_maps counts in base pages)
// and, when HUGE_BYTES > 0, a MAP_HUGETLB mapping; it writes to every page,
// prints "ready" (and "huge=0 errno=N" where the kernel refused the huge
// pages), and waits to be killed, touching nothing more.
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB (1UL << 20)

static void touch(volatile char *p, size_t n) {
	for (size_t i = 0; i < n; i += 4096) p[i] = 1;
	if (n > 0) p[n - 1] = 1;
}

// stack_then_wait grows the main thread's stack by n bytes, touched from
// the top down as a real deep stack grows, then reports and waits there.
static void __attribute__((noinline)) stack_then_wait(size_t n, const char *note) {
	volatile char buf[n];
	for (size_t i = n; i >= 4096; i -= 4096) buf[i - 1] = 1;
	buf[0] = 1;
	(void)buf[n - 1];
	printf("ready%s\n", note);
	fflush(stdout);
	for (;;) pause();
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: memmix HEAP_MIB STACK_MIB ANON_MIB HUGE_BYTES\n");
		return 2;
	}
	size_t heap = strtoul(argv[1], 0, 10) * MIB, stack = strtoul(argv[2], 0, 10) * MIB;
	size_t anon = strtoul(argv[3], 0, 10) * MIB, huge = strtoul(argv[4], 0, 10);

	// Room for the stack: the kernel checks RLIMIT_STACK as it grows.
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < stack + 8 * MIB) {
		rl.rlim_cur = stack + 8 * MIB;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max) {
			fprintf(stderr, "memmix: RLIMIT_STACK's hard limit %lu is below %zu\n", (unsigned long)rl.rlim_max, stack);
			return 1;
		}
		if (setrlimit(RLIMIT_STACK, &rl) != 0) {
			perror("memmix: setrlimit");
			return 1;
		}
	}

	mallopt(M_MMAP_MAX, 0); // every malloc from brk: the [heap] mapping
	char *h = malloc(heap);
	if (!h) {
		perror("memmix: malloc");
		return 1;
	}
	touch(h, heap);

	char *a = mmap(0, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		perror("memmix: mmap");
		return 1;
	}
	madvise(a, anon, MADV_HUGEPAGE);
	touch(a, anon);

	char note[64] = "";
	if (huge > 0) {
		char *g = mmap(0, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (g == MAP_FAILED) {
			snprintf(note, sizeof note, " huge=0 errno=%d", errno);
		} else {
			touch(g, huge);
		}
	}
	stack_then_wait(stack, note);
	return 0;
}
