/* crash.c: makes CALLS getppid calls, then ends as MODE says, for
 * TestExitStatusOfCrashingTargets. Written apart from numascope.
 *
 *   crash MODE CALLS
 *
 * MODE is exitN (exit(N)), segv (a store through a null pointer), abort
 * (abort(3)), kill (SIGKILL to itself) or term (SIGTERM to itself). No core
 * file is written: the test leaves nothing behind. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: crash MODE CALLS\n");
		return 2;
	}
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	long calls = atol(argv[2]);
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	const char *mode = argv[1];
	if (strncmp(mode, "exit", 4) == 0)
		exit(atoi(mode + 4));
	if (strcmp(mode, "segv") == 0) {
		volatile int *p = NULL;
		*p = 1;
	}
	if (strcmp(mode, "abort") == 0)
		abort();
	if (strcmp(mode, "kill") == 0)
		kill(getpid(), SIGKILL);
	if (strcmp(mode, "term") == 0)
		kill(getpid(), SIGTERM);
	fprintf(stderr, "crash: unknown mode %s\n", mode);
	return 2;
}
