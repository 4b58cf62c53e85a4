/* A hostile diagnostic server for the rasp record -p tests (test-cmd-record-attach.c): it
 * answers CollectTracing as a runtime does (OK, a session id, the first bytes of a NetTrace
 * stream), then misbehaves as MODE says:
 *   silent    reads every later command (StopTracing) and never answers nor ends the stream
 *   noaccept  accepts no further connection: its backlog is kept full, so connect() waits
 *   flood     writes to the stream as fast as it can, forever; answers StopTracing OK
 * It binds $TMPDIR/dotnet-diagnostic-PID-KEY-socket (/tmp without TMPDIR) named after itself
 * or, with FOR-PID, after that process (its pid and start time: a socket planted for it),
 * KEY plus FAKE_KEY_OFFSET from the environment (a wrong key). Prints "ready PATH" once it
 * listens; runs until killed, and removes its socket at SIGTERM and SIGINT.
 *   rasp-test-fake-diag MODE [FOR-PID] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "diag-protocol.h"

#define MAX_CONN 64

static char path[108];
static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "fake-diag-server: %s: %s\n", what, strerror(errno));
	if (path[0])
		unlink(path);
	exit(1);
}

static unsigned long long start_key(long pid)
{
	char file[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "/proc/%ld/stat", pid);
	fd = open(file, O_RDONLY);
	if (fd < 0)
		die(file);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die(file);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		die("field 22");
	return strtoull(p + 1, NULL, 10);
}

/* One command: its header and payload, blocking (a test's client sends it at once). */
static int read_command(int fd, struct rasp_diag_header *h)
{
	uint8_t b[RASP_DIAG_MAX_MESSAGE];
	size_t got = 0, want = RASP_DIAG_HEADER_SIZE;

	while (got < want) {
		ssize_t r = recv(fd, b + got, want - got, 0);

		if (r <= 0)
			return -1;
		got += (size_t)r;
		if (got == RASP_DIAG_HEADER_SIZE) {
			if (rasp_diag_header_parse(b, h) != 0)
				return -1;
			want = h->size;
		}
	}
	return 0;
}

static void send_all(int fd, const void *b, size_t n)
{
	const uint8_t *p = b;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void reply_ok(int fd)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 8];
	uint64_t session = 1;

	send_all(fd, b, rasp_diag_ok_write(b, sizeof(b), &session, sizeof(session)));
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct sigaction sa = {.sa_handler = on_signal};
	const char *mode = argc > 1 ? argv[1] : "", *tmp = getenv("TMPDIR"),
		   *offset = getenv("FAKE_KEY_OFFSET");
	long for_pid = argc > 2 ? strtol(argv[2], NULL, 10) : (long)getpid();
	int kept[MAX_CONN], nkept = 0, lfd, stream = -1;
	static uint8_t chunk[65536];

	if (strcmp(mode, "silent") && strcmp(mode, "noaccept") && strcmp(mode, "flood")) {
		fprintf(stderr, "usage: rasp-test-fake-diag silent|noaccept|flood [FOR-PID]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%ld-%llu-socket",
		 tmp && *tmp ? tmp : "/tmp", for_pid,
		 start_key(for_pid) + (offset ? strtoull(offset, NULL, 10) : 0));
	memcpy(a.sun_path, path, sizeof(path));
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket");
	unlink(path);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("bind");
	if (listen(lfd, 16) != 0)
		die("listen");
	printf("ready %s\n", path);
	fflush(stdout);
	memset(chunk, 0xA5, sizeof(chunk));
	while (!quit) {
		struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = stream, .events = 0}};
		struct rasp_diag_header h;
		int c;

		if (stream >= 0 && strcmp(mode, "flood") == 0)
			p[1].events = POLLOUT;
		if (poll(p, 2, 100) < 0)
			continue;
		if (p[1].revents & (POLLERR | POLLHUP)) {
			close(stream);
			stream = -1;
		} else if (p[1].revents & POLLOUT) {
			send(stream, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept(lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (read_command(c, &h) != 0) {
			close(c);
			continue;
		}
		if (h.set == RASP_DIAG_SET_EVENTPIPE && h.id >= RASP_DIAG_EP_COLLECT &&
		    h.id <= RASP_DIAG_EP_COLLECT5 && stream < 0) {
			reply_ok(c);
			send_all(c, "\x08\0\0\0Nettrace", 12);
			stream = c;
			if (strcmp(mode, "noaccept") == 0) {
				/* Backlog 0 holds one waiting connection: this one. Every later
				 * connect() finds the queue full. */
				struct sockaddr_un self = a;
				int filler = socket(AF_UNIX, SOCK_STREAM, 0);

				if (listen(lfd, 0) != 0 || filler < 0 ||
				    connect(filler, (struct sockaddr *)&self, sizeof(self)) != 0)
					die("filling the backlog");
				while (!quit) /* listening, never accepting */
					pause();
				break;
			}
			continue;
		}
		if (strcmp(mode, "flood") == 0)
			reply_ok(c);
		if (nkept < MAX_CONN)
			kept[nkept++] = c; /* never answered, never closed */
		else
			close(c);
		(void)kept;
	}
	unlink(path);
	return 0;
}
