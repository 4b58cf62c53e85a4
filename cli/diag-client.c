/* The diagnostic protocol's client (diag-client.h). */
#define _GNU_SOURCE
#include "diag-client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "diag-protocol.h"

/* How long the target may take to answer a command. .NET runs its rundown before it answers
 * StopTracing: allow for a large program's. */
#define REPLY_TIMEOUT_S 60

/* AllocationSampled (0x80000000000) and, for a .NET program, the Loader (0x8) and Jit (0x10)
 * events that name the frames of its stacks, at Verbose; rasp programs' own events follow
 * AllocationSampled. */
#define RUNTIME_PROVIDER "Microsoft-Windows-DotNETRuntime"
#define RUNTIME_KEYWORDS UINT64_C(0x80000000018)
/* The circular buffer asked for (MB): dotnet-trace's default. */
#define BUFFER_MB 256

/* The process's TMPDIR, from its environment; /tmp when it has none. */
static void target_tmpdir(pid_t pid, char *out, size_t cap)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;

	snprintf(out, cap, "/tmp");
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (strncmp(p, "TMPDIR=", 7) == 0 && p[7] && strlen(p + 7) < cap)
			snprintf(out, cap, "%s", p + 7);
}

/* "dotnet-diagnostic-PID-KEY-socket": the pid, or -1. */
static long socket_pid(const char *name)
{
	const char *p = name + strlen("dotnet-diagnostic-");
	char *end;
	long pid;

	if (strncmp(name, "dotnet-diagnostic-", 18) != 0)
		return -1;
	pid = strtol(p, &end, 10);
	if (end == p || *end != '-' || pid <= 0)
		return -1;
	p = end + 1;
	strtoull(p, &end, 10);
	if (end == p || strcmp(end, "-socket") != 0)
		return -1;
	return pid;
}

int rasp_diag_find_socket(const char *cmd, pid_t pid, char *path, size_t cap)
{
	char dir[4096];
	struct dirent *e;
	struct timespec newest = {0, 0};
	bool found = false;
	DIR *d;

	target_tmpdir(pid, dir, sizeof(dir));
	d = opendir(dir);
	if (!d) {
		rasp_cli_error(cmd, "cannot read %s (process %d's TMPDIR): %s", dir, (int)pid,
			       strerror(errno));
		return -errno;
	}
	while ((e = readdir(d))) {
		char full[4200];
		struct stat st;

		if (socket_pid(e->d_name) != pid)
			continue;
		if ((size_t)snprintf(full, sizeof(full), "%.4095s/%.100s", dir, e->d_name) >=
		    sizeof(full))
			continue;
		if (stat(full, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		if (found &&
		    (st.st_mtim.tv_sec < newest.tv_sec ||
		     (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec <= newest.tv_nsec)))
			continue;
		if (strlen(full) >= cap ||
		    strlen(full) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			closedir(d);
			rasp_cli_error(cmd, "socket path '%s' is too long", full);
			return -ENAMETOOLONG;
		}
		snprintf(path, cap, "%s", full);
		newest = st.st_mtim;
		found = true;
	}
	closedir(d);
	if (!found) {
		if (kill(pid, 0) != 0 && errno == ESRCH)
			rasp_cli_error(cmd, "no process %d", (int)pid);
		else
			rasp_cli_error(
			    cmd,
			    "process %d has no diagnostic socket in %s: it is not a .NET program, "
			    "or a rasp program started without DOTNET_EnableDiagnostics=1 or "
			    "RASP_DIAGNOSTICS=1",
			    (int)pid, dir);
		return -ENOENT;
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

int rasp_diag_list(const char *dir, void (*fn)(void *arg, pid_t pid, const char *socket), void *arg)
{
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int count = 0;

	if (!dir) {
		dir = getenv("TMPDIR");
		if (!dir || !*dir)
			dir = "/tmp";
	}
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		long pid = socket_pid(e->d_name);

		if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
			continue; /* a socket its process left behind */
		if (n == cap) {
			size_t c = cap ? 2 * cap : 64;
			pid_t *v = realloc(pids, c * sizeof(*v));

			if (!v) {
				free(pids);
				closedir(d);
				return -ENOMEM;
			}
			pids = v;
			cap = c;
		}
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n; i++) {
		char path[4200];

		if (i && pids[i] == pids[i - 1])
			continue; /* two sockets: the newest is the one a client takes */
		if (rasp_diag_find_socket("ps", pids[i], path, sizeof(path)) == 0) {
			fn(arg, pids[i], path);
			count++;
		}
	}
	free(pids);
	return count;
}

/* ---- commands ------------------------------------------------------------------------------ */

static int connect_to(const char *cmd, const char *socket_path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = REPLY_TIMEOUT_S};
	int fd;

	if (strlen(socket_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;

		rasp_cli_error(cmd, "cannot connect to %s: %s%s", socket_path, strerror(e),
			       e == EACCES ? " (it belongs to another user: run as that user)"
			       : e == ECONNREFUSED ? " (the process has exited and left its socket)"
						   : "");
		close(fd);
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static int io_all(int fd, void *b, size_t n, bool out)
{
	uint8_t *p = b;

	while (n) {
		ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static const char *hresult_text(uint32_t hr)
{
	switch (hr) {
	case RASP_DIAG_E_BAD_ENCODING:
		return "the message is malformed";
	case RASP_DIAG_E_UNKNOWN_COMMAND:
		return "unknown command";
	case RASP_DIAG_E_UNKNOWN_MAGIC:
		return "unknown protocol";
	case RASP_DIAG_E_NOT_SUPPORTED:
		return "not supported";
	default:
		return "failed";
	}
}

/* A reply: OK with its 8-byte payload in *v, else a message. */
static int read_reply(const char *cmd, int fd, const char *what, uint64_t *v)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 8];
	struct rasp_diag_header h;
	int rc = io_all(fd, b, RASP_DIAG_HEADER_SIZE, false);

	if (rc) {
		rasp_cli_error(cmd, "no answer to %s: %s", what,
			       rc == -EAGAIN ? "timed out" : strerror(-rc));
		return rc;
	}
	if (rasp_diag_header_parse(b, &h) != 0 || h.set != RASP_DIAG_SET_SERVER) {
		rasp_cli_error(cmd, "the answer to %s is not a diagnostic reply", what);
		return -EPROTO;
	}
	if (h.id == RASP_DIAG_SERVER_ERROR && h.size == RASP_DIAG_HEADER_SIZE + 4 &&
	    io_all(fd, b + RASP_DIAG_HEADER_SIZE, 4, false) == 0) {
		uint32_t hr = (uint32_t)b[20] | (uint32_t)b[21] << 8 | (uint32_t)b[22] << 16 |
			      (uint32_t)b[23] << 24;

		rasp_cli_error(cmd, "%s refused: %s (HRESULT 0x%08" PRIx32 ")", what,
			       hresult_text(hr), hr);
		return -EPROTO;
	}
	if (h.id != RASP_DIAG_SERVER_OK || h.size != RASP_DIAG_HEADER_SIZE + 8 ||
	    io_all(fd, b + RASP_DIAG_HEADER_SIZE, 8, false) != 0) {
		rasp_cli_error(cmd, "the answer to %s is malformed", what);
		return -EPROTO;
	}
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v |= (uint64_t)b[RASP_DIAG_HEADER_SIZE + i] << (8 * i);
	return 0;
}

int rasp_diag_start(const char *cmd, const char *socket_path, int *fd_out, uint64_t *session)
{
	struct rasp_diag_provider p = {.keywords = RUNTIME_KEYWORDS, .level = 5};
	uint8_t msg[512];
	size_t n;
	int fd, rc;

	snprintf(p.name, sizeof(p.name), "%s", RUNTIME_PROVIDER);
	n = rasp_diag_collect2_write(msg, sizeof(msg), BUFFER_MB, true, &p, 1);
	fd = connect_to(cmd, socket_path);
	if (fd < 0)
		return fd;
	rc = io_all(fd, msg, n, true);
	if (rc) {
		rasp_cli_error(cmd, "cannot send CollectTracing to %s: %s", socket_path,
			       strerror(-rc));
		close(fd);
		return rc;
	}
	rc = read_reply(cmd, fd, "CollectTracing", session);
	if (rc) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

int rasp_diag_stop(const char *cmd, const char *socket_path, uint64_t session)
{
	uint8_t msg[RASP_DIAG_HEADER_SIZE + 8];
	uint64_t echo;
	int fd = connect_to(cmd, socket_path), rc;

	if (fd < 0)
		return fd;
	rasp_diag_header_write(msg, sizeof(msg), RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_STOP);
	for (int i = 0; i < 8; i++)
		msg[RASP_DIAG_HEADER_SIZE + i] = (uint8_t)(session >> (8 * i));
	rc = io_all(fd, msg, sizeof(msg), true);
	if (!rc)
		rc = read_reply(cmd, fd, "StopTracing", &echo);
	close(fd);
	return rc;
}
