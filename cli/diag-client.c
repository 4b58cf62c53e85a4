/* The diagnostic protocol's client (diag-client.h): which socket is a process's, and the
 * commands, each with a deadline. Every socket is non-blocking and every wait a poll of at
 * most 100 ms, so a server that never accepts, never answers or floods costs the caller at
 * most its timeout, and a cancellation within 100 ms. */
#define _GNU_SOURCE
#include "diag-client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
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

/* AllocationSampled (0x80000000000) and, for a .NET program, the Loader (0x8) and Jit (0x10)
 * events that name the frames of its stacks, at Verbose; rasp programs' own events follow
 * AllocationSampled. */
#define RUNTIME_PROVIDER "Microsoft-Windows-DotNETRuntime"
#define RUNTIME_KEYWORDS UINT64_C(0x80000000018)
/* The circular buffer asked for (MB): dotnet-trace's default. */
#define BUFFER_MB 256
/* The longest wait in one poll: how soon a cancellation is seen. */
#define SLICE_MS 100
/* A full backlog makes connect fail at once (EAGAIN): tried again this often. */
#define CONNECT_RETRY_MS 20

#define SOCKET_PREFIX "dotnet-diagnostic-"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A small /proc file, NUL-terminated; its length or -errno. */
static ssize_t read_proc(pid_t pid, const char *file, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

/* The process's TMPDIR, from its environment; /tmp when it has none. -EINVAL when it holds
 * a control character: it is printed in messages. */
static int target_tmpdir(pid_t pid, char *out, size_t cap)
{
	char buf[65536];
	ssize_t n = read_proc(pid, "environ", buf, sizeof(buf));

	snprintf(out, cap, "/tmp");
	if (n <= 0)
		return 0;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		if (strncmp(p, "TMPDIR=", 7) != 0 || !p[7] || strlen(p + 7) >= cap)
			continue;
		for (const char *c = p + 7; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return -EINVAL;
		snprintf(out, cap, "%s", p + 7);
	}
	return 0;
}

/* Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot, which .NET
 * (and librasp's server) put in the socket's name. */
static int start_key(pid_t pid, unsigned long long *key)
{
	char buf[1024], *p, *end;
	ssize_t n = read_proc(pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	errno = 0;
	*key = strtoull(p + 1, &end, 10);
	return errno || end == p + 1 ? -EINVAL : 0;
}

/* The effective and file-system uids of the process (/proc/PID/status): a socket it made is
 * owned by the latter, which is the former unless it called setfsuid. */
static int target_uids(pid_t pid, uid_t *euid, uid_t *fsuid)
{
	char buf[4096], *p;
	unsigned long r, e, s, f;
	ssize_t n = read_proc(pid, "status", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &r, &e, &s, &f) != 4)
		return -EINVAL;
	*euid = (uid_t)e;
	*fsuid = (uid_t)f;
	return 0;
}

/* Decimal digits only (no sign, no space) that fit 64 bits, into *v; the first byte after
 * them, or NULL. */
static const char *digits(const char *p, unsigned long long *v)
{
	const char *start = p;

	*v = 0;
	while (*p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (*v > (~0ULL - d) / 10)
			return NULL;
		*v = *v * 10 + d;
		p++;
	}
	return p == start ? NULL : p;
}

int rasp__diag_socket_name(const char *name, long *pid, unsigned long long *key)
{
	unsigned long long v;
	const char *p;

	if (strncmp(name, SOCKET_PREFIX, strlen(SOCKET_PREFIX)) != 0)
		return -EINVAL;
	p = digits(name + strlen(SOCKET_PREFIX), &v);
	if (!p || *p != '-' || v == 0 || v > INT32_MAX)
		return -EINVAL;
	*pid = (long)v;
	p = digits(p + 1, key);
	if (!p || strcmp(p, "-socket") != 0)
		return -EINVAL;
	return 0;
}

/* Why a candidate was refused, for the message when none is taken. */
struct refusal {
	char name[256];
	char why[256];
};

static int find_socket(const char *cmd, pid_t pid, char *path, size_t cap, bool quiet)
{
	char dir[4096];
	struct dirent *e;
	struct timespec newest = {0, 0};
	struct refusal refused = {.name = ""};
	unsigned long long key = 0;
	uid_t euid = 0, fsuid = 0;
	bool found = false;
	int rc;
	DIR *d;

	if (target_tmpdir(pid, dir, sizeof(dir)) != 0) {
		if (!quiet)
			rasp_cli_error(cmd,
				       "process %d's TMPDIR holds control characters: its "
				       "diagnostic socket is not looked for",
				       (int)pid);
		return -EPERM;
	}
	rc = start_key(pid, &key);
	if (!rc)
		rc = target_uids(pid, &euid, &fsuid);
	if (rc) {
		if (!quiet && (rc == -ENOENT || rc == -ESRCH))
			rasp_cli_error(cmd, "no process %d", (int)pid);
		else if (!quiet)
			rasp_cli_error(cmd,
				       "cannot read /proc/%d/stat and status (its start time and "
				       "user, to check its socket): %s",
				       (int)pid, strerror(-rc));
		return rc == -ESRCH ? -ENOENT : rc;
	}
	d = opendir(dir);
	if (!d) {
		rc = -errno;
		if (!quiet)
			rasp_cli_error(cmd, "cannot read %s (process %d's TMPDIR): %s", dir,
				       (int)pid, strerror(-rc));
		return rc;
	}
	while ((e = readdir(d))) {
		char full[4200];
		unsigned long long k;
		struct stat st;
		long p;

		if (rasp__diag_socket_name(e->d_name, &p, &k) != 0 || p != pid)
			continue;
		if ((size_t)snprintf(full, sizeof(full), "%.4095s/%.100s", dir, e->d_name) >=
		    sizeof(full))
			continue;
		/* Not followed: a link is not a socket the process made. */
		if (lstat(full, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		if (k != key) {
			snprintf(refused.name, sizeof(refused.name), "%.255s", e->d_name);
			snprintf(refused.why, sizeof(refused.why),
				 "its key %llu is not the process's start time %llu: an earlier "
				 "process with this pid left it, or another user put it there",
				 k, key);
			continue;
		}
		if (st.st_uid != euid && st.st_uid != fsuid && st.st_uid != 0) {
			snprintf(refused.name, sizeof(refused.name), "%.255s", e->d_name);
			snprintf(refused.why, sizeof(refused.why),
				 "it belongs to uid %lu, not to the process's user (uid %lu) nor "
				 "root: another user put it there",
				 (unsigned long)st.st_uid, (unsigned long)euid);
			continue;
		}
		if (found &&
		    (st.st_mtim.tv_sec < newest.tv_sec ||
		     (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec <= newest.tv_nsec)))
			continue;
		if (strlen(full) >= cap ||
		    strlen(full) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			closedir(d);
			if (!quiet)
				rasp_cli_error(cmd, "socket path '%s' is too long", full);
			return -ENAMETOOLONG;
		}
		snprintf(path, cap, "%s", full);
		newest = st.st_mtim;
		found = true;
	}
	closedir(d);
	if (found)
		return 0;
	if (refused.name[0]) {
		if (!quiet)
			rasp_cli_error(cmd, "refusing %s/%s as process %d's diagnostic socket: %s",
				       dir, refused.name, (int)pid, refused.why);
		return -EPERM;
	}
	if (!quiet)
		rasp_cli_error(
		    cmd,
		    "process %d has no diagnostic socket in %s: it is not a .NET program, "
		    "or a rasp program started without DOTNET_EnableDiagnostics=1 or "
		    "RASP_DIAGNOSTICS=1",
		    (int)pid, dir);
	return -ENOENT;
}

int rasp_diag_find_socket(const char *cmd, pid_t pid, char *path, size_t cap)
{
	return find_socket(cmd, pid, path, cap, false);
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
		unsigned long long key;
		long pid;

		if (rasp__diag_socket_name(e->d_name, &pid, &key) != 0 ||
		    (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
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
	if (n)
		qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n; i++) {
		char path[4200];

		if (i && pids[i] == pids[i - 1])
			continue; /* two sockets: the checks take one */
		if (find_socket("ps", pids[i], path, sizeof(path), true) == 0) {
			fn(arg, pids[i], path);
			count++;
		}
	}
	free(pids);
	return count;
}

/* ---- commands ------------------------------------------------------------------------------ */

static bool is_cancelled(const struct rasp_diag_wait *w)
{
	return w && w->cancelled && w->cancelled(w->arg);
}

/* Until fd has one of events, the deadline passes (-ETIMEDOUT) or w is cancelled
 * (-ECANCELED). events 0: only sleeps a slice (the caller tries again). */
static int wait_fd(int fd, short events, const struct rasp_diag_wait *w, double deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		double left = deadline - now_s();
		int ms, r;

		if (is_cancelled(w))
			return -ECANCELED;
		if (left <= 0)
			return -ETIMEDOUT;
		ms = left * 1000 < SLICE_MS ? (int)(left * 1000) + 1 : SLICE_MS;
		if (!events) {
			struct timespec ts = {
			    0, (long)(ms < CONNECT_RETRY_MS ? ms : CONNECT_RETRY_MS) * 1000000L};

			nanosleep(&ts, NULL);
			return 0;
		}
		r = poll(&p, 1, ms);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			return 0; /* POLLHUP and POLLERR too: the next call says what */
	}
}

static const char *wait_text(int rc, double timeout_s, char *buf, size_t cap)
{
	if (rc == -ETIMEDOUT)
		snprintf(buf, cap, "no answer within %g s", timeout_s);
	else if (rc == -ECANCELED)
		snprintf(buf, cap, "no longer waited for");
	else
		snprintf(buf, cap, "%s", strerror(-rc));
	return buf;
}

static int io_all(int fd, void *b, size_t n, bool out, const struct rasp_diag_wait *w,
		  double deadline)
{
	uint8_t *p = b;

	while (n) {
		ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
				: recv(fd, p, n, MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			int rc = wait_fd(fd, out ? POLLOUT : POLLIN, w, deadline);

			if (rc)
				return rc;
			continue;
		}
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Connects within w to socket_path, whose server must be process pid: a socket file can be
 * replaced between find_socket's checks and here, the server's credentials cannot. */
static int connect_to(const char *cmd, const char *socket_path, pid_t pid,
		      const struct rasp_diag_wait *w, double deadline)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char why[128];
	int fd, rc = 0;

	if (strlen(socket_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		rc = -errno;
		if (rc == -EINTR)
			continue;
		if (rc == -EAGAIN) /* the backlog is full: no way to wait but to try again */
			rc = wait_fd(fd, 0, w, deadline);
		else if (rc == -EINPROGRESS) {
			int err = 0;
			socklen_t elen = sizeof(err);

			rc = wait_fd(fd, POLLOUT, w, deadline);
			if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0)
				rc = -err;
			if (!rc)
				break;
		}
		if (rc)
			break;
	}
	if (rc) {
		rasp_cli_error(cmd, "cannot connect to %s: %s%s", socket_path,
			       rc == -ETIMEDOUT ? "the process did not accept the connection"
						: wait_text(rc, w->timeout_s, why, sizeof(why)),
			       rc == -EACCES ? " (it belongs to another user: run as that user)"
			       : rc == -ECONNREFUSED
				   ? " (the process has exited and left its socket)"
				   : "");
		close(fd);
		return rc;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != pid) {
		rasp_cli_error(cmd,
			       "refusing %s: its server is process %ld, not process %d (another "
			       "program made it)",
			       socket_path, len == sizeof(cred) ? (long)cred.pid : -1L, (int)pid);
		close(fd);
		return -EPERM;
	}
	return fd;
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
static int read_reply(const char *cmd, int fd, const char *what, const struct rasp_diag_wait *w,
		      double deadline, uint64_t *v)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 8];
	struct rasp_diag_header h;
	char why[128];
	int rc = io_all(fd, b, RASP_DIAG_HEADER_SIZE, false, w, deadline);

	if (rc) {
		rasp_cli_error(cmd, "no answer to %s: %s", what,
			       rc == -ECONNRESET ? "the process closed the connection"
						 : wait_text(rc, w->timeout_s, why, sizeof(why)));
		return rc;
	}
	if (rasp_diag_header_parse(b, &h) != 0 || h.set != RASP_DIAG_SET_SERVER) {
		rasp_cli_error(cmd, "the answer to %s is not a diagnostic reply", what);
		return -EPROTO;
	}
	if (h.id == RASP_DIAG_SERVER_ERROR && h.size == RASP_DIAG_HEADER_SIZE + 4 &&
	    io_all(fd, b + RASP_DIAG_HEADER_SIZE, 4, false, w, deadline) == 0) {
		uint32_t hr = (uint32_t)b[20] | (uint32_t)b[21] << 8 | (uint32_t)b[22] << 16 |
			      (uint32_t)b[23] << 24;

		rasp_cli_error(cmd, "%s refused: %s (HRESULT 0x%08" PRIx32 ")", what,
			       hresult_text(hr), hr);
		return -EPROTO;
	}
	if (h.id != RASP_DIAG_SERVER_OK || h.size != RASP_DIAG_HEADER_SIZE + 8 ||
	    io_all(fd, b + RASP_DIAG_HEADER_SIZE, 8, false, w, deadline) != 0) {
		rasp_cli_error(cmd, "the answer to %s is malformed (id %u, %u bytes)", what,
			       (unsigned)h.id, (unsigned)h.size);
		return -EPROTO;
	}
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v |= (uint64_t)b[RASP_DIAG_HEADER_SIZE + i] << (8 * i);
	return 0;
}

static int exchange(const char *cmd, int fd, const uint8_t *msg, size_t n, const char *what,
		    const struct rasp_diag_wait *w, double deadline, uint64_t *v)
{
	char why[128];
	int rc = io_all(fd, (void *)msg, n, true, w, deadline);

	if (rc) {
		rasp_cli_error(cmd, "cannot send %s: %s", what,
			       wait_text(rc, w->timeout_s, why, sizeof(why)));
		return rc;
	}
	return read_reply(cmd, fd, what, w, deadline, v);
}

int rasp__diag_exchange(const char *cmd, int fd, const uint8_t *msg, size_t n, const char *what,
			const struct rasp_diag_wait *w, uint64_t *v)
{
	return exchange(cmd, fd, msg, n, what, w, now_s() + w->timeout_s, v);
}

int rasp_diag_start(const char *cmd, const char *socket_path, pid_t pid,
		    const struct rasp_diag_wait *w, int *fd_out, uint64_t *session)
{
	struct rasp_diag_provider p = {.keywords = RUNTIME_KEYWORDS, .level = 5};
	double deadline = now_s() + w->timeout_s;
	uint8_t msg[512];
	size_t n;
	int fd, rc;

	snprintf(p.name, sizeof(p.name), "%s", RUNTIME_PROVIDER);
	n = rasp_diag_collect2_write(msg, sizeof(msg), BUFFER_MB, true, &p, 1);
	fd = connect_to(cmd, socket_path, pid, w, deadline);
	if (fd < 0)
		return fd;
	rc = exchange(cmd, fd, msg, n, "CollectTracing", w, deadline, session);
	if (rc) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

int rasp_diag_stop(const char *cmd, const char *socket_path, pid_t pid,
		   const struct rasp_diag_wait *w, uint64_t session)
{
	uint8_t msg[RASP_DIAG_HEADER_SIZE + 8];
	double deadline = now_s() + w->timeout_s;
	uint64_t echo;
	int fd = connect_to(cmd, socket_path, pid, w, deadline), rc;

	if (fd < 0)
		return fd;
	rasp_diag_header_write(msg, sizeof(msg), RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_STOP);
	for (int i = 0; i < 8; i++)
		msg[RASP_DIAG_HEADER_SIZE + i] = (uint8_t)(session >> (8 * i));
	rc = exchange(cmd, fd, msg, sizeof(msg), "StopTracing", w, deadline, &echo);
	close(fd);
	return rc;
}
