/* barereads: the floor of an exporter scrape. It opens the files given on
 * the command line once, then N times reads each of them whole with pread
 * at offset 0 (as numascope's sensors do, keeping the descriptors open),
 * and prints its own CPU time (user + system, getrusage) per pass in
 * microseconds. Nothing is parsed or formatted: this is the least any
 * exporter of these files must do (scripts/bench-exporter).
 *
 *   barereads N FILE...
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	if (argc < 3) {
		fprintf(stderr, "usage: barereads N FILE...\n");
		return 2;
	}
	long n = atol(argv[1]);
	int nf = argc - 2;
	int *fd = calloc(nf, sizeof *fd);
	for (int i = 0; i < nf; i++) {
		fd[i] = open(argv[i + 2], O_RDONLY);
		if (fd[i] < 0) {
			perror(argv[i + 2]);
			return 1;
		}
	}
	long bytes = 0;
	double t0 = cpu_us();
	for (long k = 0; k < n; k++) {
		for (int i = 0; i < nf; i++) {
			off_t off = 0;
			ssize_t r;
			while ((r = pread(fd[i], buf, sizeof buf, off)) > 0) {
				off += r;
				bytes += r;
			}
			if (r < 0) {
				perror(argv[i + 2]);
				return 1;
			}
		}
	}
	double t1 = cpu_us();
	printf("%.2f %ld\n", (t1 - t0) / n, bytes / (n ? n : 1));
	return 0;
}
