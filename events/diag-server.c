/* The diagnostic server: .NET's IPC protocol on a Unix socket, so `dotnet-trace collect -p PID`
 * and `rasp record -p PID` start an EventPipe session in a running rasp program (docs/
 * diagnostics.md).
 *
 * Off by default: a C library that opens a socket in every program linking it would surprise
 * (.NET's runtime does it by default; a library cannot know its host wants it). On with
 * DOTNET_EnableDiagnostics=1 (or COMPlus_), as .NET spells it, or RASP_DIAGNOSTICS=1;
 * DOTNET_EnableDiagnostics_IPC=0 turns it off again. Disabled, it is a few getenv calls at
 * load: no socket, no thread, nothing on any allocation path.
 *
 * Enabled: $TMPDIR/dotnet-diagnostic-{pid}-{key}-socket (/tmp without TMPDIR; key: the
 * process's start time in clock ticks, as .NET's), mode 0600, removed at exit; a file already
 * there that is not a socket of this user is left alone, and the server does not run (said on
 * stderr). Each connection carries one command: CollectTracing 1 to 5 (IPC stream sessions:
 * the reply, then the session's NetTrace stream on the same connection, eventpipe.c),
 * StopTracing, ProcessInfo 1 to 3 and ResumeRuntime (nothing to resume: OK). Anything else gets
 * the protocol's error and the connection is closed.
 *
 * Two threads. The connection thread polls up to MAX_CONNS connections at once without
 * blocking on any: a client has 2 s from its connect to send its whole command (however it
 * spreads its bytes), then 2 s to read the reply, so a slow or stuck client costs a slot for
 * 2 s and never another client's turn. CollectTracing and StopTracing wait for the sessions'
 * writer (a stop until its client has read the stream's end, up to 5 s): the command thread
 * (diag-commands.c) runs them one after another, while the connection thread goes on
 * answering. What the server takes from its environment is diag-env.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "diag-commands.h"
#include "diag-env.h"
#include "diag-protocol.h"

#if defined(__x86_64__)
#define ARCH "x64"
#elif defined(__aarch64__)
#define ARCH "arm64"
#elif defined(__i386__)
#define ARCH "x86"
#elif defined(__arm__)
#define ARCH "arm"
#else
#define ARCH "unknown"
#endif

static struct {
	bool running; /* in this process (a forked child has none) */
	pid_t owner;
	int fd;
	dev_t dev; /* the socket file, as bound */
	ino_t ino;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	uint8_t cookie[16];
	char cmdline[4096], assembly[256];
	/* The connection thread's: a reply being made. */
	uint8_t payload[RASP_DIAG_MAX_MESSAGE - RASP_DIAG_HEADER_SIZE];
	uint8_t out[RASP_DIAG_MAX_MESSAGE];
} D; /* zero-initialised, so in .bss: an initialiser put its 150 KB in .data, 96 KiB of every
	process's RSS */

/* ---- connections (the connection thread) --------------------------------------------------- */

/* Connections read or answered at once; more wait in the listen backlog until one ends, at
 * most RASP__DIAG_IO_TIMEOUT_MS later. Each costs its message (at most 64 KiB) while it is read. */
#define MAX_CONNS 32

enum { FREE, READING, WRITING };

struct conn {
	int fd, state;
	/* Reading: the end of the whole command, from the accept (a client that sends a byte
	 * now and then gets no more time than one that sends nothing). Writing: of the reply. */
	int64_t deadline;
	struct rasp_diag_header h;
	uint8_t head[RASP_DIAG_HEADER_SIZE];
	uint8_t *buf; /* reading: the payload (h.size - 20 bytes); writing: the reply */
	size_t done;  /* reading: bytes received (header and payload); writing: bytes sent */
	size_t len;   /* writing: the reply's length */
};

static struct conn C[MAX_CONNS];

static void conn_close(struct conn *c)
{
	free(c->buf);
	rasp__diag_lock();
	close(c->fd);
	*c = (struct conn){.fd = -1, .state = FREE};
	rasp__diag_unlock();
}

/* The reply in b (copied), to be sent as the client reads it, within RASP__DIAG_IO_TIMEOUT_MS. */
static void conn_reply(struct conn *c, const uint8_t *b, size_t n)
{
	free(c->buf);
	c->buf = n ? malloc(n) : NULL;
	if (!c->buf) {
		conn_close(c); /* no memory for a reply: the client sees the connection end */
		return;
	}
	memcpy(c->buf, b, n);
	c->state = WRITING;
	c->done = 0;
	c->len = n;
	c->deadline = rasp__diag_now_ms() + RASP__DIAG_IO_TIMEOUT_MS;
}

static void conn_error(struct conn *c, uint32_t hresult)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 4];

	conn_reply(c, b, rasp_diag_error_write(b, sizeof(b), hresult));
}

static void conn_ok(struct conn *c, const void *payload, size_t n)
{
	size_t len = rasp_diag_ok_write(D.out, sizeof(D.out), payload, n);

	if (len)
		conn_reply(c, D.out, len);
	else
		conn_error(c, RASP_DIAG_E_FAIL);
}

static void process_info(struct conn *c, uint8_t id)
{
	struct rasp_diag_process pi = {.pid = (uint64_t)getpid(),
				       .command_line = D.cmdline,
				       .os = "Linux",
				       .arch = ARCH,
				       .assembly = D.assembly,
				       .version = RASP_VERSION,
				       .rid = "linux-" ARCH};
	size_t n;

	memcpy(pi.cookie, D.cookie, sizeof(pi.cookie));
	n = rasp_diag_process_write(id, &pi, D.payload, sizeof(D.payload));
	if (n)
		conn_ok(c, D.payload, n);
	else
		conn_error(c, RASP_DIAG_E_FAIL);
}

/* StopTracing and CollectTracing wait for the sessions' writer (a stop, until its client has
 * read the end: up to 5 s): the command thread runs them, so that the connection thread goes
 * on serving everyone else meanwhile. */
static void hand_over(struct conn *c)
{
	bool queued;

	rasp__diag_lock();
	queued = rasp__diag_enqueue(c->fd, c->h.id, c->buf, c->h.size - RASP_DIAG_HEADER_SIZE,
				    MAX_CONNS);
	if (queued)
		*c = (struct conn){.fd = -1, .state = FREE}; /* the command thread's now */
	rasp__diag_unlock();
	if (!queued)
		conn_error(c, RASP_DIAG_E_FAIL); /* that many commands already wait */
}

/* The whole message is in: its command. */
static void dispatch(struct conn *c)
{
	switch (c->h.set << 8 | c->h.id) {
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_STOP:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT2:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT3:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT4:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT5:
		hand_over(c);
		return;
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO:
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO2:
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO3:
		process_info(c, c->h.id);
		return;
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_RESUME: {
		static const uint8_t zero[4];

		conn_ok(c, zero, sizeof(zero)); /* never suspended */
		return;
	}
	default:
		conn_error(c, RASP_DIAG_E_UNKNOWN_COMMAND);
		return;
	}
}

/* Reads what the client has sent, without waiting. At most one message: 20 bytes of header,
 * then the payload the header announces. */
static void conn_read(struct conn *c)
{
	for (;;) {
		bool head = c->done < RASP_DIAG_HEADER_SIZE;
		size_t want = head ? RASP_DIAG_HEADER_SIZE - c->done : c->h.size - c->done;
		uint8_t *at = head ? c->head + c->done : c->buf + (c->done - RASP_DIAG_HEADER_SIZE);
		ssize_t r = recv(c->fd, at, want, 0);
		int rc;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			/* The client ended (or failed) before its message did: a short header has
			 * nothing to answer; a short payload is malformed. */
			if (head || r < 0)
				conn_close(c);
			else
				conn_error(c, RASP_DIAG_E_BAD_ENCODING);
			return;
		}
		c->done += (size_t)r;
		if (head && c->done == RASP_DIAG_HEADER_SIZE) {
			rc = rasp_diag_header_parse(c->head, &c->h);
			if (rc) {
				conn_error(c, rc == -EPROTO ? RASP_DIAG_E_UNKNOWN_MAGIC
							    : RASP_DIAG_E_BAD_ENCODING);
				return;
			}
			if (c->h.size > RASP_DIAG_HEADER_SIZE) {
				c->buf = malloc(c->h.size - RASP_DIAG_HEADER_SIZE);
				if (!c->buf) {
					conn_error(c, RASP_DIAG_E_FAIL);
					return;
				}
			}
		}
		/* (h.size is read, and at least 20, once the header is in) */
		if (c->done >= RASP_DIAG_HEADER_SIZE && c->done == c->h.size) {
			dispatch(c);
			return;
		}
	}
}

static void conn_write(struct conn *c)
{
	while (c->done < c->len) {
		ssize_t w =
		    send(c->fd, c->buf + c->done, c->len - c->done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0)
			break; /* the client is gone */
		c->done += (size_t)w;
	}
	conn_close(c); /* replied: one command a connection */
}

/* Its time is up: a client still sending its command gets the malformed error if its header
 * came (one try, no wait), and the connection ends. */
static void conn_expire(struct conn *c)
{
	if (c->state == READING && c->done >= RASP_DIAG_HEADER_SIZE) {
		uint8_t b[RASP_DIAG_HEADER_SIZE + 4];

		send(c->fd, b, rasp_diag_error_write(b, sizeof(b), RASP_DIAG_E_BAD_ENCODING),
		     MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	conn_close(c);
}

/* New connections, while a slot is free. False when the listening socket is gone. */
static bool accept_some(int64_t *pause_until)
{
	for (size_t i = 0; i < MAX_CONNS; i++) {
		int fd, err;

		if (C[i].state != FREE)
			continue;
		rasp__diag_lock();
		fd = accept4(D.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		err = errno;
		if (fd >= 0)
			C[i] = (struct conn){.fd = fd,
					     .state = READING,
					     .deadline =
						 rasp__diag_now_ms() + RASP__DIAG_IO_TIMEOUT_MS};
		rasp__diag_unlock();
		errno = err;
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			if (errno == EINTR || errno == ECONNABORTED)
				return true; /* poll says when to try again */
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			    errno == ENOBUFS) {
				/* Out of descriptors or memory: try again later, not in a loop. */
				*pause_until = rasp__diag_now_ms() + 100;
				return true;
			}
			return false;
		}
	}
	return true;
}

static void *server_main(void *arg)
{
	struct pollfd p[MAX_CONNS + 1];
	int at[MAX_CONNS + 1];
	int64_t pause_until = 0;

	(void)arg;
	for (;;) {
		int64_t now = rasp__diag_now_ms(), wait = -1;
		bool room = false;
		nfds_t n = 0;

		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &C[i];

			if (c->state != FREE && now >= c->deadline)
				conn_expire(c);
			if (c->state == FREE) {
				room = true;
				continue;
			}
			p[n] = (struct pollfd){.fd = c->fd,
					       .events = c->state == READING ? POLLIN : POLLOUT};
			at[n++] = i;
			if (wait < 0 || c->deadline - now < wait)
				wait = c->deadline - now;
		}
		if (room && now < pause_until && (wait < 0 || pause_until - now < wait))
			wait = pause_until - now;
		if (room && now >= pause_until) {
			p[n] = (struct pollfd){.fd = D.fd, .events = POLLIN};
			at[n++] = -1;
		}
		if (poll(p, n, (int)wait) < 0) {
			if (errno != EINTR)
				poll(NULL, 0, 100); /* ENOMEM: again later */
			continue;
		}
		for (nfds_t k = 0; k < n; k++) {
			if (!p[k].revents)
				continue;
			if (at[k] < 0) {
				if ((p[k].revents & POLLNVAL) || !accept_some(&pause_until))
					return NULL; /* the socket is gone */
			} else if (C[at[k]].state == READING) {
				conn_read(&C[at[k]]);
			} else if (C[at[k]].state == WRITING) {
				conn_write(&C[at[k]]);
			}
		}
	}
}

/* ---- start and end ------------------------------------------------------------------------- */

/* Across an exec no code of this image runs, so nothing can remove or rename the socket file
 * then; the pid and the start key stay the same, so the name does too. What changes is that
 * nobody listens: the listening descriptor is close-on-exec, and the kernel's table of
 * listening sockets (/proc/net/unix) no longer has the path. rasp ps skips such a socket
 * (rasp_diag_unix_listens), a connect to it is refused, and a new image that runs a server
 * takes the path back (bind_path: the file is a socket of this user). */

static const char *kind(mode_t m)
{
	return S_ISREG(m)    ? "a regular file"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISLNK(m)  ? "a symbolic link"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISFIFO(m) ? "a FIFO"
			     : "a device";
}

/* Binds D.fd to a->sun_path. A file already there is replaced only when it is a socket of
 * this user: its name holds this process's pid and start key, so an earlier image of this
 * process left it before an exec. Anything else (a file, a directory, a link, another user's
 * socket: planted, or a mistake) is left alone and the server does not run, why (cap bytes)
 * saying so; .NET's runtime likewise binds without removing anything and reports the
 * failure. 0 or a negative errno (-EEXIST: why is set). */
static int bind_path(const struct sockaddr_un *a, char *why, size_t cap)
{
	struct stat st;

	/* The file's mode, set before bind creates it (the umask can only take bits away): no
	 * moment when others can connect, and no chmod by name that a swapped name redirects. */
	if (fchmod(D.fd, 0600) < 0)
		return -errno;
	for (int tries = 0; tries < 3; tries++) {
		if (bind(D.fd, (const struct sockaddr *)a, sizeof(*a)) == 0) {
			if (lstat(a->sun_path, &st) == 0) {
				D.dev = st.st_dev;
				D.ino = st.st_ino;
			}
			return 0;
		}
		if (errno != EADDRINUSE)
			return -errno;
		if (lstat(a->sun_path, &st) < 0) {
			if (errno == ENOENT)
				continue; /* gone meanwhile */
			return -errno;
		}
		if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
			snprintf(why, cap,
				 "'%s' exists, %s of uid %u, not a socket of this user (uid %u): "
				 "left alone",
				 a->sun_path, kind(st.st_mode), (unsigned)st.st_uid,
				 (unsigned)geteuid());
			return -EEXIST;
		}
		if (unlink(a->sun_path) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EADDRINUSE;
}

static int spawn(pthread_t *t, void *(*fn)(void *), const char *name)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	/* The program's signal handlers never run on the server's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(t, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		pthread_setname_np(*t, name); /* for top, gdb and the tests */
	return -rc;
}

/* A fork waits for the lock: the child's copy of the connections is whole. */
static void fork_prepare(void)
{
	rasp__diag_lock();
}

static void fork_parent(void)
{
	rasp__diag_unlock();
}

/* The socket, its file and the clients are the parent's: the child, which serves nothing,
 * closes its copies, so that a client sees its connection end when the parent ends it, and
 * the listening socket has no holder but the parent (after the parent's exec, none, as
 * rasp ps expects). Once: the handler stays registered in the child, and at the child's own
 * fork the numbers are stale, maybe reused by descriptors of the child's that are not ours. */
static void fork_child(void)
{
	if (D.running) {
		close(D.fd);
		for (size_t i = 0; i < MAX_CONNS; i++)
			if (C[i].state != FREE) {
				close(C[i].fd);
				free(C[i].buf);
				C[i] = (struct conn){.fd = -1, .state = FREE};
			}
	}
	rasp__diag_commands_fork_child(D.running);
	D.fd = -1;
	D.running = false;
	rasp__diag_unlock();
}

static int start(char *why, size_t cap)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *tmp = getenv("TMPDIR");
	pthread_t cmd;
	int n, rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = snprintf(D.path, sizeof(D.path), "%s%sdotnet-diagnostic-%d-%llu-socket", tmp,
		     tmp[strlen(tmp) - 1] == '/' ? "" : "/", (int)getpid(), rasp__diag_start_key());
	if (n < 0 || (size_t)n >= sizeof(D.path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, D.path, (size_t)n + 1);
	rasp__diag_identity(D.cmdline, sizeof(D.cmdline), D.assembly, sizeof(D.assembly), D.cookie);
	D.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (D.fd < 0)
		return -errno;
	rc = bind_path(&a, why, cap);
	if (rc) {
		close(D.fd);
		D.fd = -1;
		return rc;
	}
	rc = listen(D.fd, 64) < 0 ? -errno : 0;
	if (!rc)
		rc = spawn(&cmd, rasp__diag_command_main, "rasp-diag-cmd");
	if (!rc)
		rc = spawn(&D.thread, server_main, "rasp-diag");
	/* (the command thread, if it started, waits for commands that never come) */
	if (rc) {
		unlink(D.path);
		close(D.fd);
		D.fd = -1;
		return rc;
	}
	D.owner = getpid();
	D.running = true;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	return 0;
}

__attribute__((constructor)) static void rasp__diag_init(void)
{
	char why[PATH_MAX + 160] = "";
	int rc;

	if (!rasp__diag_enabled())
		return;
	rc = start(why, sizeof(why));
	if (rc == -EEXIST)
		fprintf(stderr, "rasp: diagnostics: %s; no diagnostic server\n", why);
	else if (rc)
		fprintf(stderr,
			"rasp: diagnostics: cannot listen on '%s' (%s); no diagnostic server\n",
			D.path, strerror(-rc));
}

__attribute__((destructor)) static void rasp__diag_fini(void)
{
	struct stat st;

	if (!D.running || D.owner != getpid())
		return;
	/* The file goes, if it is still the one bound; the threads end with the process (they
	 * may be serving a client). */
	if (lstat(D.path, &st) == 0 && st.st_dev == D.dev && st.st_ino == D.ino)
		unlink(D.path);
	D.running = false;
}
