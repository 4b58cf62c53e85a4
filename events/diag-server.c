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
 * process's start time in clock ticks, as .NET's), mode 0600, removed at exit. One thread
 * accepts connections one at a time, each carrying one command: CollectTracing 1 to 5 (IPC
 * stream sessions: the reply, then the session's NetTrace stream on the same connection,
 * eventpipe.c), StopTracing, ProcessInfo 1 to 3 and ResumeRuntime (nothing to resume: OK).
 * Anything else gets the protocol's error and the connection is closed. A client has 2 s to
 * send its command and to read the reply; the thread never waits longer on one. */
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
#include <unistd.h>

#include "diag-protocol.h"
#include "eventpipe-config.h"
#include "eventpipe.h"

/* How long a client may take to send its command, or to read a reply. */
#define IO_TIMEOUT_S 2
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
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	uint8_t cookie[16];
	char cmdline[4096], assembly[256];
	/* The server thread's: one message at a time. */
	uint8_t msg[RASP_DIAG_MAX_MESSAGE];
	uint8_t out[RASP_DIAG_MAX_MESSAGE];
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

/* ---- one connection ------------------------------------------------------------------------ */

static int recv_all(int fd, uint8_t *b, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, b, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno; /* EAGAIN: the client took too long */
		if (r == 0)
			return -ECONNRESET;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the client is gone or does not read: nothing to do */
		b += w;
		n -= (size_t)w;
	}
}

static void reply_error(int fd, uint32_t hresult)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 4];

	send_all(fd, b, rasp_diag_error_write(b, sizeof(b), hresult));
}

static void reply_ok(int fd, const void *payload, size_t n)
{
	size_t len = rasp_diag_ok_write(D.out, sizeof(D.out), payload, n);

	if (len)
		send_all(fd, D.out, len);
	else
		reply_error(fd, RASP_DIAG_E_FAIL);
}

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
	/* The session's writer sends on its own schedule: the connection must not block it. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	rc = rasp__ep_session_start(fd, session, mask, mb << 20, reply, sizeof(reply));
	if (rc) {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		fprintf(stderr, "rasp: diagnostics: cannot start a session: %s\n", strerror(-rc));
		reply_error(fd, RASP_DIAG_E_FAIL);
		return false;
	}
	return true;
}

static void stop(int fd, const uint8_t *p, size_t n)
{
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
	reply_ok(fd, p, 8);
}

static void process_info(int fd, uint8_t id)
{
	struct rasp_diag_process pi = {.pid = (uint64_t)getpid(),
				       .command_line = D.cmdline,
				       .os = "Linux",
				       .arch = ARCH,
				       .assembly = D.assembly,
				       .version = RASP_VERSION,
				       .rid = "linux-" ARCH};
	static uint8_t payload[RASP_DIAG_MAX_MESSAGE - RASP_DIAG_HEADER_SIZE];
	size_t n;

	memcpy(pi.cookie, D.cookie, sizeof(pi.cookie));
	n = rasp_diag_process_write(id, &pi, payload, sizeof(payload));
	if (n)
		reply_ok(fd, payload, n);
	else
		reply_error(fd, RASP_DIAG_E_FAIL);
}

/* One connection, one command. True when a session now owns it. */
static bool serve(int fd)
{
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	struct rasp_diag_header h;
	size_t n;
	int rc;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (recv_all(fd, D.msg, RASP_DIAG_HEADER_SIZE))
		return false; /* a short header: nothing to answer */
	rc = rasp_diag_header_parse(D.msg, &h);
	if (rc) {
		reply_error(fd,
			    rc == -EPROTO ? RASP_DIAG_E_UNKNOWN_MAGIC : RASP_DIAG_E_BAD_ENCODING);
		return false;
	}
	n = h.size - RASP_DIAG_HEADER_SIZE;
	if (recv_all(fd, D.msg + RASP_DIAG_HEADER_SIZE, n)) {
		reply_error(fd, RASP_DIAG_E_BAD_ENCODING);
		return false;
	}
	switch (h.set << 8 | h.id) {
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_STOP:
		stop(fd, D.msg + RASP_DIAG_HEADER_SIZE, n);
		return false;
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT2:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT3:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT4:
	case RASP_DIAG_SET_EVENTPIPE << 8 | RASP_DIAG_EP_COLLECT5:
		return collect(fd, h.id, D.msg + RASP_DIAG_HEADER_SIZE, n);
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO:
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO2:
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_INFO3:
		process_info(fd, h.id);
		return false;
	case RASP_DIAG_SET_PROCESS << 8 | RASP_DIAG_PROC_RESUME: {
		static const uint8_t zero[4];

		reply_ok(fd, zero, sizeof(zero)); /* never suspended */
		return false;
	}
	default:
		reply_error(fd, RASP_DIAG_E_UNKNOWN_COMMAND);
		return false;
	}
}

static void *server_main(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept4(D.fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			    errno == ENOBUFS) {
				/* Out of descriptors or memory: try again later, not in a loop. */
				poll(NULL, 0, 100);
				continue;
			}
			return NULL; /* the socket is gone (exit) */
		}
		if (!serve(c))
			close(c);
	}
}

/* ---- start and end ------------------------------------------------------------------------- */

static void after_fork_child(void)
{
	D.running = false; /* the socket and its file are the parent's */
}

static int start(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *tmp = getenv("TMPDIR");
	pthread_attr_t attr;
	sigset_t all, old;
	int n, rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = snprintf(D.path, sizeof(D.path), "%s%sdotnet-diagnostic-%d-%llu-socket", tmp,
		     tmp[strlen(tmp) - 1] == '/' ? "" : "/", (int)getpid(), start_key());
	if (n < 0 || (size_t)n >= sizeof(D.path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, D.path, (size_t)n + 1);
	read_identity();
	D.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (D.fd < 0)
		return -errno;
	unlink(D.path); /* a stale one of an earlier process with this pid and key */
	if (bind(D.fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	/* Before listen: nobody can connect while the mode is still the umask's. */
	if (chmod(D.path, 0600) < 0 || listen(D.fd, 64) < 0)
		goto fail_bound;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(&D.thread, &attr, server_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		errno = rc;
		goto fail_bound;
	}
	pthread_setname_np(D.thread, "rasp-diag"); /* for top, gdb and the tests */
	D.owner = getpid();
	D.running = true;
	pthread_atfork(NULL, NULL, after_fork_child);
	return 0;
fail_bound:
	rc = -errno;
	unlink(D.path);
	close(D.fd);
	D.fd = -1;
	return rc;
fail:
	rc = -errno;
	close(D.fd);
	D.fd = -1;
	return rc;
}

__attribute__((constructor)) static void rasp__diag_init(void)
{
	int rc;

	if (!enabled())
		return;
	rc = start();
	if (rc)
		fprintf(stderr,
			"rasp: diagnostics: cannot listen on '%s' (%s); no diagnostic server\n",
			D.path, strerror(-rc));
}

__attribute__((destructor)) static void rasp__diag_fini(void)
{
	if (!D.running || D.owner != getpid())
		return;
	/* The file goes; the thread ends with the process (it may be serving a client). */
	unlink(D.path);
	D.running = false;
}
