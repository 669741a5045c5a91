/* bareserve: the floor of an exporter scrape over HTTP. It listens on
 * 127.0.0.1:PORT and answers every request on a kept-alive connection, one
 * connection at a time, by reading the files given on the command line
 * whole with pread (descriptors kept open, as barereads does) and writing
 * a fixed body, read once at start from BODY (a captured scrape, so the
 * same bytes as the exporter sends), behind a minimal HTTP/1.1 header with
 * Content-Length, in one writev. Nothing is parsed or formatted: this is
 * the least an exporter of these files must do to answer HTTP
 * (scripts/bench-exporter measures its CPU like the exporters').
 *
 *   bareserve BODY FILE... PORT
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 16], req[1 << 16];
	if (argc < 3) {
		fprintf(stderr, "usage: bareserve BODY FILE... PORT\n");
		return 2;
	}
	int bfd = open(argv[1], O_RDONLY);
	struct stat st;
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	char *body = malloc(st.st_size);
	if (read(bfd, body, st.st_size) != st.st_size) {
		perror(argv[1]);
		return 1;
	}
	char head[256];
	int hlen = snprintf(head, sizeof head,
			    "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nContent-Length: %ld\r\n\r\n",
			    (long)st.st_size);
	int nf = argc - 3;
	int *fd = calloc(nf, sizeof *fd);
	for (int i = 0; i < nf; i++) {
		fd[i] = open(argv[i + 2], O_RDONLY);
		if (fd[i] < 0) {
			perror(argv[i + 2]);
			return 1;
		}
	}
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[argc - 1])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 16) < 0) {
		perror("bind");
		return 1;
	}
	for (;;) {
		int c = accept(ls, NULL, NULL);
		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		size_t have = 0;
		for (;;) {
			ssize_t r = read(c, req + have, sizeof req - have - 1);
			if (r <= 0)
				break;
			have += r;
			req[have] = 0;
			char *end;
			while ((end = strstr(req, "\r\n\r\n")) != NULL) { /* a whole request (GET: no body) */
				for (int i = 0; i < nf; i++) {
					off_t off = 0;
					ssize_t n;
					while ((n = pread(fd[i], buf, sizeof buf, off)) > 0)
						off += n;
				}
				struct iovec iov[2] = {{head, hlen}, {body, st.st_size}};
				size_t left = hlen + st.st_size;
				ssize_t w = writev(c, iov, 2);
				if (w < 0 || (size_t)w != left) { /* a short write: send the rest plainly */
					size_t done = w < 0 ? 0 : w;
					while (done < left) {
						const char *p = done < (size_t)hlen ? head + done : body + (done - hlen);
						size_t n = done < (size_t)hlen ? hlen - done : left - done;
						ssize_t k = write(c, p, n);
						if (k <= 0)
							break;
						done += k;
					}
				}
				size_t used = end + 4 - req;
				memmove(req, req + used, have - used + 1);
				have -= used;
			}
			if (have >= sizeof req - 1)
				break;
		}
		close(c);
	}
}
