/*
 * baresampler: the least a sampler of /proc/vmstat counters must pay, the
 * baseline of scripts/bench (docs/performance.md, "Whole-process CPU per
 * sample").
 *
 * It does what numascope's sampler and its sinks do, and nothing else:
 *   - sleeps to absolute CLOCK_MONOTONIC deadlines with
 *     clock_nanosleep(TIMER_ABSTIME); a wake-up more than one interval after
 *     its deadline serves the latest deadline passed and counts the ones
 *     before it as missed, not caught up (internal/sampler, Run);
 *   - one pread of /proc/vmstat per sample on a descriptor kept open, into a
 *     preallocated buffer; each counter's line is found where it was last
 *     time (a byte comparison of the name), searched for only when the
 *     kernel's layout changed;
 *   - one clock_gettime per sample, before the read: rates are the counters'
 *     change over the real time since the previous sample;
 *   - writes the bytes numascope writes:
 *       term   one line per sample as `numascope stat` prints it when stdout
 *              is not a terminal (internal/term, raw numbers), written
 *              out once per batch, as numascope does;
 *       jsonl  a recording (docs/recording-format.md): header, one sample
 *              line per sample, an end line; through a 64 KiB buffer flushed
 *              once per batch, as internal/recorder flushes a plain file
 *              when it has caught up with its queue;
 *       zst    the same lines through libzstd (level 3, 1 MiB window, as
 *              internal/recording's encoder), a block flushed at most every
 *              250 ms (internal/recorder's zstdFlushEvery).
 *   SIGINT/SIGTERM stop sampling after a final sample over the partial
 *   interval, as numascope does. SIGUSR1 writes a label mark "mN" (N = 1, 2,
 *   ...) in the output format's own way (the terminal's "# T label: mN" note,
 *   a recording's label line), so that scripts/bench can count the samples
 *   between two instants exactly as it does for numascope (numascope ctl
 *   label).
 *
 * Build: gcc -O2 -static -o baresampler baresampler.c -lzstd
 *        (-DNO_ZSTD without libzstd: no zst mode)
 * Usage: baresampler -i INTERVAL [-n COUNT | -d DURATION] [-m term|jsonl|zst]
 *                    [-o PATH] [-t] EVENT...
 *   INTERVAL, DURATION: 100us, 1ms, 1.5s, 2m ... (as numascope's -i);
 *   EVENT: a /proc/vmstat counter, optionally prefixed vmstat. (pgfault,
 *   vmstat.pgalloc_normal). term writes to stdout unless -o.
 *   -o tcp:HOST:PORT (an IPv4 address) writes to a TCP connection instead of
 *   a file, with TCP_NODELAY as Go's connections have: the floor for
 *   `numascope live`, whose samples leave through a socket (scripts/bench
 *   reads it with wsclient -sink).
 *   -t sets the thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK): an
 *   ordinary thread's clock_nanosleep may wake up to 50 us after its deadline
 *   (the kernel's default slack, to batch timer interrupts); numascope's
 *   timerfd has none. A stricter floor for missed deadlines at short
 *   intervals (scripts/bench-misses).
 * At exit it prints one line to stderr:
 *   baresampler: N samples, M missed deadlines
 * baresampler -F NUMBER... prints how it formats each number (recording
 * value, terminal value, recording time from seconds), for the tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#ifndef NO_ZSTD
#include <zstd.h>
#endif

#define MAXEV 64
#define VMSTAT_BUF (256 << 10)
#define OUTBUF (64 << 10)
#define ZSTD_FLUSH_NS 250000000LL
/* numascope's sinks are woken, and write out, once per batch: every sample
 * at intervals of 50 ms or more, every 50 ms below (sampler.BatchEvery). */
#define BATCH_NS 50000000LL

enum mode { TERM, JSONL, ZST };

static const char *prog = "baresampler";
static volatile sig_atomic_t stop_flag, mark_flag;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static void on_stop(int sig) { (void)sig; stop_flag = 1; }
static void on_mark(int sig) { (void)sig; mark_flag++; }

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* parse_duration reads a Go-style duration with one unit: 100us, 1ms, 1.5s. */
static int64_t parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mul;
	if (end == s || v < 0)
		die("bad duration %s: give e.g. 100us, 10ms, 1s", s);
	if (!strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us") || !strcmp(end, "\xc2\xb5s"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s"))
		mul = 1e9;
	else if (!strcmp(end, "m"))
		mul = 60e9;
	else if (!strcmp(end, "h"))
		mul = 3600e9;
	else
		die("bad duration %s: give e.g. 100us, 10ms, 1s", s);
	return (int64_t)llround(v * mul);
}

/* ---- /proc/vmstat ---- */

struct event {
	const char *name; /* without "vmstat." */
	size_t len;
	size_t pos;   /* offset of its line in the last read */
	uint64_t val; /* latest value */
	uint64_t prev;
	double rate;
};

static struct event ev[MAXEV];
static int nev;
static int vmfd;
static char vmbuf[VMSTAT_BUF];

/* find locates ev's line in buf[0:n] from scratch. */
static int find(struct event *e, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (i + e->len < n && !memcmp(vmbuf + i, e->name, e->len) && vmbuf[i + e->len] == ' ') {
			e->pos = i;
			return 0;
		}
		char *nl = memchr(vmbuf + i, '\n', n - i);
		if (!nl)
			break;
		i = (size_t)(nl - vmbuf) + 1;
	}
	return -1;
}

/* read_vmstat takes one pread and parses every event in place. */
static void read_vmstat(void)
{
	ssize_t n = pread(vmfd, vmbuf, sizeof vmbuf - 1, 0);
	if (n < 0)
		die("reading /proc/vmstat: %s", strerror(errno));
	if ((size_t)n >= sizeof vmbuf - 1)
		die("/proc/vmstat is larger than %s", "256 KiB");
	for (int k = 0; k < nev; k++) {
		struct event *e = &ev[k];
		size_t p = e->pos;
		if (!(p + e->len < (size_t)n && !memcmp(vmbuf + p, e->name, e->len) &&
		      vmbuf[p + e->len] == ' ' && (p == 0 || vmbuf[p - 1] == '\n'))) {
			if (find(e, (size_t)n) < 0)
				die("no counter %s in /proc/vmstat", e->name);
			p = e->pos;
		}
		uint64_t v = 0;
		for (const char *c = vmbuf + p + e->len + 1; *c >= '0' && *c <= '9'; c++)
			v = v * 10 + (uint64_t)(*c - '0');
		e->val = v;
	}
}

/* ---- output ---- */

static enum mode mode = TERM;
static int outfd = 1;
static char out[OUTBUF]; /* the 64 KiB write buffer */
static size_t outn;
static char line[16 << 10];
static int widths[MAXEV];
#ifndef NO_ZSTD
static ZSTD_CCtx *zc;
static char zout[OUTBUF];
#endif

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(outfd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("writing the output: %s", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
}

static void flush_out(void)
{
	if (outn) {
		write_all(out, outn);
		outn = 0;
	}
}

/* buffer copies p into the 64 KiB buffer, writing it out whenever it is full
 * (as bufio.Writer does). */
static void buffer(const char *p, size_t n)
{
	while (n > 0) {
		size_t room = sizeof out - outn;
		size_t c = n < room ? n : room;
		memcpy(out + outn, p, c);
		outn += c;
		p += c;
		n -= c;
		if (outn == sizeof out)
			flush_out();
	}
}

#ifndef NO_ZSTD
static void zstd_run(const char *p, size_t n, ZSTD_EndDirective op)
{
	ZSTD_inBuffer in = {p, n, 0};
	for (;;) {
		ZSTD_outBuffer o = {zout, sizeof zout, 0};
		size_t left = ZSTD_compressStream2(zc, &o, &in, op);
		if (ZSTD_isError(left))
			die("zstd: %s", ZSTD_getErrorName(left));
		if (o.pos)
			buffer(zout, o.pos);
		if (op == ZSTD_e_continue ? in.pos == in.size : left == 0)
			break;
	}
}
#endif

/* emit hands one line to the output. */
static void emit(const char *p, size_t n)
{
	switch (mode) {
	case TERM: /* buffered, written out once per batch as `numascope stat` does */
	case JSONL:
		buffer(p, n);
		break;
	case ZST:
#ifndef NO_ZSTD
		zstd_run(p, n, ZSTD_e_continue);
#endif
		break;
	}
}

/* flush makes everything emitted visible in the file (ends a zstd block). */
static void flush(void)
{
#ifndef NO_ZSTD
	if (mode == ZST)
		zstd_run(NULL, 0, ZSTD_e_flush);
#endif
	flush_out();
}

static char *pad_left(char *b, char *start, int width)
{
	int n = (int)(b - start);
	if (n >= width)
		return b;
	int shift = width - n;
	memmove(start + shift, start, (size_t)n);
	memset(start, ' ', (size_t)shift);
	return b + shift;
}

/* append_raw writes v as internal/term's appendRaw does for unit "":
 * integers exactly, six significant digits otherwise, no exponent from 1e5 up. */
static char *append_raw(char *b, double v)
{
	double a = fabs(v);
	if (v == trunc(v) && a < 1e15)
		return b + sprintf(b, "%lld", (long long)v);
	if (a >= 1e5)
		return b + sprintf(b, "%.0f", v);
	return b + sprintf(b, "%.6g", v);
}

/* append_seconds writes ns as seconds with microsecond resolution, trailing
 * zeros dropped (internal/recording, appendSeconds). */
static char *append_seconds(char *b, int64_t ns)
{
	int64_t us = (ns >= 0 ? ns + 500 : ns - 500) / 1000;
	if (us < 0) {
		*b++ = '-';
		us = -us;
	}
	b += sprintf(b, "%lld", (long long)(us / 1000000));
	int64_t frac = us % 1000000;
	if (frac == 0)
		return b;
	char f[8];
	f[0] = '.';
	for (int k = 6; k >= 1; k--) {
		f[k] = (char)('0' + frac % 10);
		frac /= 10;
	}
	int n = 7;
	while (f[n - 1] == '0')
		n--;
	memcpy(b, f, (size_t)n);
	return b + n;
}

/* append_value writes v as a recording does (internal/recording,
 * appendValue): null for non-finite values, integers below 1e15 exactly,
 * else nine significant digits with an exponent only below 1e-4 or from
 * 1e15 up. */
static char *append_value(char *b, double v)
{
	if (!isfinite(v)) {
		memcpy(b, "null", 4);
		return b + 4;
	}
	if (v == trunc(v) && v > -1e15 && v < 1e15)
		return b + sprintf(b, "%lld", (long long)v);
	char e[40];
	sprintf(e, "%.8e", v);
	const char *s = e;
	int neg = *s == '-';
	if (neg)
		s++;
	char d[9];
	int nd = 0;
	for (; *s && *s != 'e'; s++)
		if (*s != '.' && nd < 9)
			d[nd++] = *s;
	int exp = atoi(s + 1);
	while (nd > 1 && d[nd - 1] == '0')
		nd--;
	char *start = b;
	if (neg)
		*b++ = '-';
	if (exp >= 15 || exp < -4) {
		*b++ = d[0];
		if (nd > 1) {
			*b++ = '.';
			memcpy(b, d + 1, (size_t)nd - 1);
			b += nd - 1;
		}
		b += sprintf(b, "e%d", exp);
	} else if (exp >= 0) {
		for (int k = 0; k <= exp; k++)
			*b++ = k < nd ? d[k] : '0';
		if (nd > exp + 1) {
			*b++ = '.';
			memcpy(b, d + exp + 1, (size_t)(nd - exp - 1));
			b += nd - exp - 1;
		}
	} else {
		*b++ = '0';
		*b++ = '.';
		for (int k = exp + 1; k < 0; k++)
			*b++ = '0';
		memcpy(b, d, (size_t)nd);
		b += nd;
	}
	if (b - start == 2 && start[0] == '-' && start[1] == '0') {
		start[0] = '0';
		b = start + 1;
	}
	return b;
}

static void write_header(int64_t interval, const struct timespec *wall)
{
	char *b = line;
	if (mode == TERM) {
		b += sprintf(b, "%9s", "time");
		for (int k = 0; k < nev; k++)
			b += sprintf(b, " %*s", widths[k], ev[k].name);
		*b++ = '\n';
		emit(line, (size_t)(b - line));
		return;
	}
	struct utsname u;
	uname(&u);
	struct tm tm;
	gmtime_r(&wall->tv_sec, &tm);
	char start[64];
	strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%S", &tm);
	b += sprintf(b,
		     "{\"type\":\"header\",\"format\":\"numascope\",\"version\":1,\"host\":\"%s\","
		     "\"kernel\":\"%s\",\"start\":\"%s.%09ldZ\",\"interval_s\":",
		     u.nodename, u.release, start, wall->tv_nsec);
	b = append_value(b, (double)interval / 1e9);
	b += sprintf(b, ",\"sensors\":[{\"name\":\"vmstat\",\"present\":true,\"reason\":\"\","
			"\"sources\":[\"\"]}],\"columns\":[");
	for (int k = 0; k < nev; k++)
		b += sprintf(b,
			     "%s{\"name\":\"vmstat.%s\",\"sensor\":\"vmstat\",\"event\":\"%s\","
			     "\"sources\":[\"\"],\"unit\":\"\",\"kind\":\"counter\",\"desc\":\"\"}",
			     k ? "," : "", ev[k].name, ev[k].name);
	b += sprintf(b, "]}\n");
	emit(line, (size_t)(b - line));
	flush(); /* the recorder flushes the header at once */
}

static void write_sample(int64_t t)
{
	char *b = line;
	if (mode == TERM) {
		char *s = b;
		b += sprintf(b, "%.3f", (double)t / 1e9);
		b = pad_left(b, s, 9);
		for (int k = 0; k < nev; k++) {
			*b++ = ' ';
			s = b;
			b = append_raw(b, ev[k].rate);
			b = pad_left(b, s, widths[k]);
		}
	} else {
		*b++ = '[';
		b = append_seconds(b, t);
		for (int k = 0; k < nev; k++) {
			*b++ = ',';
			b = append_value(b, ev[k].rate);
		}
		*b++ = ']';
	}
	*b++ = '\n';
	emit(line, (size_t)(b - line));
}

static void write_mark(int64_t t, unsigned n)
{
	char *b = line;
	if (mode == TERM) {
		b += sprintf(b, "# %.3f label: m%u\n", (double)t / 1e9, n);
	} else {
		b += sprintf(b, "{\"type\":\"label\",\"t\":");
		b = append_seconds(b, t);
		b += sprintf(b, ",\"text\":\"m%u\"}\n", n);
	}
	emit(line, (size_t)(b - line));
}

static void write_end(int64_t t, uint64_t samples, uint64_t missed)
{
	if (mode == TERM)
		return;
	char *b = line;
	b += sprintf(b, "{\"type\":\"end\",\"t\":");
	b = append_seconds(b, t);
	b += sprintf(b, ",\"samples\":%llu,\"missed_deadlines\":%llu,\"dropped\":0}\n",
		     (unsigned long long)samples, (unsigned long long)missed);
	emit(line, (size_t)(b - line));
#ifndef NO_ZSTD
	if (mode == ZST)
		zstd_run(NULL, 0, ZSTD_e_end);
#endif
	flush_out();
}

/* format_check prints, for each number, how a recording and how the terminal
 * would write it, tab-separated: internal/benchtest compares these with
 * internal/recording and internal/term. */
static int format_check(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		double v = strtod(argv[i], NULL);
		char *b = line;
		b = append_value(b, v);
		*b++ = '\t';
		b = append_raw(b, v);
		*b++ = '\t';
		b = append_seconds(b, (int64_t)llround(v * 1e9));
		*b++ = '\n';
		write_all(line, (size_t)(b - line));
	}
	return 0;
}

/* dial connects to HOST:PORT (IPv4) over TCP, with Nagle off. */
static int dial(const char *hostport)
{
	char host[64];
	const char *colon = strrchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof host)
		die("-o tcp:%s: give tcp:HOST:PORT", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("-o tcp:%s: the host is not an IPv4 address", hostport);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("cannot connect to the output: %s", strerror(errno));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static void usage(void)
{
	fprintf(stderr, "usage: %s -i INTERVAL [-n COUNT | -d DURATION] [-m term|jsonl|zst] [-o PATH] [-t] EVENT...\n"
			"  e.g. %s -i 10ms -n 100 -m jsonl -o out.jsonl pgfault pgalloc_normal pgfree numa_local\n",
		prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int64_t interval = 1000000000LL, duration = 0;
	uint64_t count = 0;
	const char *path = NULL;
	int opt;
	if (argc > 1 && !strcmp(argv[1], "-F"))
		return format_check(argc - 2, argv + 2);
	while ((opt = getopt(argc, argv, "i:n:d:m:o:th")) != -1) {
		switch (opt) {
		case 'i':
			interval = parse_duration(optarg);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			duration = parse_duration(optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "term"))
				mode = TERM;
			else if (!strcmp(optarg, "jsonl"))
				mode = JSONL;
			else if (!strcmp(optarg, "zst"))
				mode = ZST;
			else
				die("unknown mode %s: give term, jsonl or zst", optarg);
			break;
		case 'o':
			path = optarg;
			break;
		case 't':
			if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) != 0)
				die("prctl(PR_SET_TIMERSLACK): %s", strerror(errno));
			break;
		default:
			usage();
		}
	}
	if (interval < 1000)
		die("interval %s is below 1us", "given");
	if (optind == argc)
		usage();
	for (int i = optind; i < argc; i++) {
		if (nev == MAXEV)
			die("at most %s events", "64");
		const char *n = argv[i];
		if (!strncmp(n, "vmstat.", 7))
			n += 7;
		ev[nev].name = n;
		ev[nev].len = strlen(n);
		int w = (int)strlen(n);
		widths[nev] = w; /* raw output: a column is as wide as its heading */
		nev++;
	}
#ifdef NO_ZSTD
	if (mode == ZST)
		die("built without libzstd (-DNO_ZSTD): %s mode is not available", "zst");
#else
	if (mode == ZST) {
		zc = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, 3);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_windowLog, 20);
	}
#endif
	if (mode != TERM && !path)
		die("mode %s needs -o PATH", mode == JSONL ? "jsonl" : "zst");
	if (path && !strncmp(path, "tcp:", 4))
		outfd = dial(path + 4);
	else if (path) {
		outfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (outfd < 0)
			die("cannot create the output: %s", strerror(errno));
	}
	vmfd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
	if (vmfd < 0)
		die("cannot open /proc/vmstat: %s", strerror(errno));

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_RESTART; /* clock_nanosleep still returns EINTR */
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_mark;
	sigaction(SIGUSR1, &sa, NULL);

	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	int64_t base = mono();
	read_vmstat(); /* prime: a rate needs a previous read */
	for (int k = 0; k < nev; k++)
		ev[k].prev = ev[k].val;
	write_header(interval, &wall);

	int64_t last = base, deadline = base + interval, last_flush = base;
	uint64_t samples = 0, missed = 0;
	unsigned marks = 0;
	sig_atomic_t marked = 0;
	struct timespec ts;

	for (;;) {
		/* Sleep to the deadline; a signal (EINTR) is handled, then the
		 * sleep goes on to the same absolute deadline. */
		int stopping = 0;
		for (;;) {
			if (stop_flag) {
				stopping = 1;
				break;
			}
			if (mark_flag != marked) {
				marked = mark_flag;
				write_mark(mono() - base, ++marks);
				flush();
			}
			ts.tv_sec = deadline / 1000000000LL;
			ts.tv_nsec = deadline % 1000000000LL;
			int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			if (r == 0)
				break;
			if (r != EINTR)
				die("clock_nanosleep: %s", strerror(r));
		}
		if (stopping && mono() <= last)
			break;

		/* One clock read per wake-up, before the read. A wake-up more than
		 * an interval after its deadline serves the latest deadline passed;
		 * the ones before it are missed (internal/sampler, Run). */
		int64_t now = mono();
		if (!stopping && now < deadline)
			continue;
		if (!stopping) {
			int64_t skipped = (now - deadline) / interval;
			missed += (uint64_t)skipped;
			deadline += skipped * interval + interval;
		}
		read_vmstat();
		double dt = (double)(now - last) / 1e9;
		for (int k = 0; k < nev; k++) {
			ev[k].rate = (double)(ev[k].val - ev[k].prev) / dt; /* wrap-safe delta */
			ev[k].prev = ev[k].val;
		}
		last = now;
		samples++;
		write_sample(now - base);
		if (now - last_flush >= (mode == ZST ? ZSTD_FLUSH_NS : BATCH_NS)) {
			flush();
			last_flush = now;
		}
		if (stopping || (count && samples >= count) || (duration && now - base >= duration))
			break;
	}
	flush();
	write_end(last - base, samples, missed);
	if (path && close(outfd) < 0)
		die("closing the output: %s", strerror(errno));
	fprintf(stderr, "%s: %llu samples, %llu missed deadlines\n", prog, (unsigned long long)samples,
		(unsigned long long)missed);
	return 0;
}
