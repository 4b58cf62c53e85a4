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
 * runs them one after another, while the connection thread goes on answering. */
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
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "diag-protocol.h"
#include "eventpipe-config.h"
#include "eventpipe.h"

/* How long a client may take to send its whole command, then to read the whole reply. */
#define IO_TIMEOUT_MS 2000
/* A client's session queue: its circular buffer size, within these bounds. */
#define MIN_QUEUE_MB 4
#define MAX_QUEUE_MB 1024

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
	/* The command thread's. */
	struct rasp_diag_collect collect;
} D; /* zero-initialised, so in .bss: an initialiser put its 150 KB in .data, 96 KiB of every
	process's RSS */

/* ---- configuration ------------------------------------------------------------------------- */

/* 1, 0, or -1 when unset; a value that is not a number is said and taken as unset. */
static int flag(const char *name)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v)
		return -1;
	errno = 0;
	n = strtoul(v, &end, 16); /* CLRConfig numbers are hexadecimal */
	if (errno || end == v || *end) {
		fprintf(stderr, "rasp: diagnostics: %s='%s' is not a number; ignored\n", name, v);
		return -1;
	}
	return n != 0;
}

static int dotnet_flag(const char *name)
{
	char buf[64];
	int v;

	snprintf(buf, sizeof(buf), "DOTNET_%s", name);
	v = flag(buf);
	if (v < 0) {
		snprintf(buf, sizeof(buf), "COMPlus_%s", name);
		v = flag(buf);
	}
	return v;
}

static bool enabled(void)
{
	int rasp = flag("RASP_DIAGNOSTICS"), dotnet = dotnet_flag("EnableDiagnostics");

	if (dotnet_flag("EnableDiagnostics_IPC") == 0)
		return false;
	if (rasp >= 0)
		return rasp == 1;
	return dotnet == 1;
}

/* The process's start time in clock ticks (field 22 of /proc/self/stat), .NET's key. */
static unsigned long long start_key(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	/* After ") ": field 3 onwards; field 22 is the 20th of them. */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

static void read_identity(void)
{
	char exe[PATH_MAX];
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, D.cmdline, sizeof(D.cmdline) - 1);
		close(fd);
		if (n > 0) {
			/* Arguments are NUL-separated: spaces, as .NET shows them. */
			while (n > 0 && D.cmdline[n - 1] == '\0')
				n--;
			for (ssize_t i = 0; i < n; i++)
				if (D.cmdline[i] == '\0')
					D.cmdline[i] = ' ';
			D.cmdline[n] = '\0';
		}
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		const char *base;

		exe[n] = '\0';
		base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
		if (strlen(base) < sizeof(D.assembly))
			memcpy(D.assembly, base, strlen(base) + 1);
	}
	if (getrandom(D.cookie, sizeof(D.cookie), GRND_NONBLOCK) != (ssize_t)sizeof(D.cookie)) {
		uint64_t t = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^ (uint64_t)time(NULL);

		memcpy(D.cookie, &t, sizeof(t));
	}
}

/* ---- replies ------------------------------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Sends b on fd (non-blocking) until done, the client gone, or the deadline (ms). For the
 * command thread's short replies; the connection thread never waits on one client. */
static void send_until(int fd, const uint8_t *b, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int64_t left;

		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return; /* the client is gone: nothing to do */
		left = deadline - now_ms();
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			return;
	}
}

static void reply_error(int fd, uint32_t hresult)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 4];

	send_until(fd, b, rasp_diag_error_write(b, sizeof(b), hresult), now_ms() + IO_TIMEOUT_MS);
}

/* ---- the commands that wait for the sessions' writer (the command thread) ------------------ */

/* CollectTracing: true when the connection now belongs to a session. */
static bool collect(int fd, uint8_t id, const uint8_t *p, size_t n)
{
	struct rasp_diag_collect *c = &D.collect;
	struct rasp__ep_provider ps[RASP_DIAG_MAX_PROVIDERS];
	uint8_t reply[RASP_DIAG_HEADER_SIZE + 8], sid[8];
	char why[160];
	uint64_t mask, session;
	size_t mb;
	int rc = rasp_diag_collect_parse(id, p, n, c, why, sizeof(why));

	if (rc) {
		fprintf(stderr, "rasp: diagnostics: CollectTracing refused: %s\n", why);
		reply_error(fd, RASP_DIAG_E_BAD_ENCODING);
		return false;
	}
	if (c->session_type != 0 || c->format != 1) {
		fprintf(stderr,
			"rasp: diagnostics: CollectTracing refused: session type %u, format %u "
			"(rasp streams NetTrace (1) over the connection (0) only)\n",
			c->session_type, c->format);
		reply_error(fd, RASP_DIAG_E_NOT_SUPPORTED);
		return false;
	}
	for (size_t i = 0; i < c->nproviders; i++)
		ps[i] = (struct rasp__ep_provider){c->providers[i].name, c->providers[i].keywords,
						   c->providers[i].level};
	mask = rasp__ep_providers_mask(ps, c->nproviders, c->stackwalk);
	mb = c->buffer_mb < MIN_QUEUE_MB   ? MIN_QUEUE_MB
	     : c->buffer_mb > MAX_QUEUE_MB ? MAX_QUEUE_MB
					   : c->buffer_mb;
	session = rasp__ep_session_new_id();
	for (int i = 0; i < 8; i++)
		sid[i] = (uint8_t)(session >> (8 * i));
	rasp_diag_ok_write(reply, sizeof(reply), sid, sizeof(sid));
	/* The connection is non-blocking (accept4): the session's writer sends on its own
	 * schedule and must not block on it. */
	rc = rasp__ep_session_start(fd, session, mask, mb << 20, reply, sizeof(reply));
	if (rc) {
		fprintf(stderr, "rasp: diagnostics: cannot start a session: %s\n", strerror(-rc));
		reply_error(fd, RASP_DIAG_E_FAIL);
		return false;
	}
	return true;
}

static void stop(int fd, const uint8_t *p, size_t n)
{
	uint8_t reply[RASP_DIAG_HEADER_SIZE + 8];
	uint64_t id = 0;
	int rc;

	if (n != 8) {
		reply_error(fd, RASP_DIAG_E_BAD_ENCODING);
		return;
	}
	for (int i = 0; i < 8; i++)
		id |= (uint64_t)p[i] << (8 * i);
	rc = rasp__ep_session_stop(id);
	if (rc == -ENOENT || rc == -ESHUTDOWN) {
		reply_error(fd, RASP_DIAG_E_FAIL);
		return;
	}
	/* Ended, even on a late write error of the stream: say so as .NET does. */
	send_until(fd, reply, rasp_diag_ok_write(reply, sizeof(reply), p, 8),
		   now_ms() + IO_TIMEOUT_MS);
}

/* A command handed to the command thread: the connection and its message's payload. */
struct job {
	struct job *next;
	int fd;
	uint8_t id;
	uint8_t *payload; /* malloc'd, n bytes */
	size_t n;
};

/* The lock guards the queue and, against a fork, every descriptor of a client: a forked
 * child gets copies of them, and closes them (fork_child), so it must see none half made or
 * half closed. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job *head, **tail;
	size_t n;    /* queued, at most MAX_CONNS */
	int current; /* the connection of the command being run, or -1 */
} Q = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .tail = &Q.head,
       .current = -1};

static void *command_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct job *j;
		bool kept = false;

		pthread_mutex_lock(&Q.lock);
		while (!Q.head)
			pthread_cond_wait(&Q.wake, &Q.lock);
		j = Q.head;
		Q.head = j->next;
		if (!Q.head)
			Q.tail = &Q.head;
		Q.n--;
		Q.current = j->fd;
		pthread_mutex_unlock(&Q.lock);
		if (j->id == RASP_DIAG_EP_STOP)
			stop(j->fd, j->payload, j->n);
		else
			kept = collect(j->fd, j->id, j->payload, j->n); /* kept: the session's */
		pthread_mutex_lock(&Q.lock);
		if (!kept)
			close(j->fd);
		Q.current = -1;
		pthread_mutex_unlock(&Q.lock);
		free(j->payload);
		free(j);
	}
	return NULL;
}

/* ---- connections (the connection thread) --------------------------------------------------- */

/* Connections read or answered at once; more wait in the listen backlog until one ends, at
 * most IO_TIMEOUT_MS later. Each costs its message (at most 64 KiB) while it is read. */
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
	pthread_mutex_lock(&Q.lock);
	close(c->fd);
	*c = (struct conn){.fd = -1, .state = FREE};
	pthread_mutex_unlock(&Q.lock);
}

/* The reply in b (copied), to be sent as the client reads it, within IO_TIMEOUT_MS. */
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
	c->deadline = now_ms() + IO_TIMEOUT_MS;
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
	struct job *j;

	pthread_mutex_lock(&Q.lock);
	j = Q.n < MAX_CONNS ? malloc(sizeof(*j)) : NULL;
	if (j) {
		*j = (struct job){.fd = c->fd,
				  .id = c->h.id,
				  .payload = c->buf,
				  .n = c->h.size - RASP_DIAG_HEADER_SIZE};
		*Q.tail = j;
		Q.tail = &j->next;
		Q.n++;
		pthread_cond_signal(&Q.wake);
		*c = (struct conn){.fd = -1, .state = FREE}; /* the command thread's now */
	}
	pthread_mutex_unlock(&Q.lock);
	if (!j)
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
		pthread_mutex_lock(&Q.lock);
		fd = accept4(D.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		err = errno;
		if (fd >= 0)
			C[i] = (struct conn){
			    .fd = fd, .state = READING, .deadline = now_ms() + IO_TIMEOUT_MS};
		pthread_mutex_unlock(&Q.lock);
		errno = err;
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			if (errno == EINTR || errno == ECONNABORTED)
				return true; /* poll says when to try again */
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			    errno == ENOBUFS) {
				/* Out of descriptors or memory: try again later, not in a loop. */
				*pause_until = now_ms() + 100;
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
		int64_t now = now_ms(), wait = -1;
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
	pthread_mutex_lock(&Q.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&Q.lock);
}

/* The socket, its file and the clients are the parent's: the child, which serves nothing,
 * closes its copies, so that a client sees its connection end when the parent ends it, and
 * the listening socket has no holder but the parent (after the parent's exec, none, as
 * rasp ps expects). Once: the handler stays registered in the child, and at the child's own
 * fork the numbers are stale, maybe reused by descriptors of the child's that are not ours. */
static void fork_child(void)
{
	struct job *j = Q.head;

	if (D.running) {
		close(D.fd);
		for (size_t i = 0; i < MAX_CONNS; i++)
			if (C[i].state != FREE) {
				close(C[i].fd);
				free(C[i].buf);
				C[i] = (struct conn){.fd = -1, .state = FREE};
			}
		for (; j; j = j->next)
			close(j->fd);
		if (Q.current >= 0)
			close(Q.current);
	}
	D.fd = -1;
	D.running = false;
	while (Q.head) {
		j = Q.head;
		Q.head = j->next;
		free(j->payload);
		free(j);
	}
	Q.tail = &Q.head;
	Q.n = 0;
	Q.current = -1;
	pthread_mutex_unlock(&Q.lock);
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
		     tmp[strlen(tmp) - 1] == '/' ? "" : "/", (int)getpid(), start_key());
	if (n < 0 || (size_t)n >= sizeof(D.path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, D.path, (size_t)n + 1);
	read_identity();
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
		rc = spawn(&cmd, command_main, "rasp-diag-cmd");
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

	if (!enabled())
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
