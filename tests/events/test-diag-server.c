/* The diagnostic server (events/diag-server.c) and the EventPipe sessions it starts
 * (events/eventpipe.c), black box: diag-prog runs with RASP_DIAGNOSTICS=1 in a private TMPDIR
 * and this test is its client, speaking the protocol's bytes (codec/diag-protocol.h) over
 * the real socket. Its streams are read back with rasp's NetTrace reader (itself checked
 * against TraceEvent by tests/dotnet). Covered: no socket and no thread when disabled;
 * ProcessInfo, ResumeRuntime and the protocol's errors (wrong magic, short and oversized
 * headers, unknown commands, malformed and unsupported requests, an unknown session);
 * 100 connect/disconnect cycles; two sessions at once, each a complete trace with every sample
 * after its thread's SamplingConfigured and nothing lost; a client that vanishes; a client
 * that does not read (its session drops events and the trace counts them, the program goes
 * on); the program exiting mid-session (the stream ends cleanly, the socket file goes). Then
 * the server's bounds against slow clients (a byte every 1.5 s, stalled headers, a stop
 * waiting for its client: others are answered meanwhile, each ends on time), the exit with
 * 15 clients that do not read (5 s in all, not 5 s each), what is at the socket's path before
 * the program starts (left alone and said, or the user's own stale socket replaced), exec (the
 * socket has no listener, `rasp ps`, the second argument, skips it) and fork (the child holds
 * no socket, and its own fork leaves its descriptors alone). After each, the program still answers
 * and ends with every allocation made. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "diag-protocol.h"
#include "lttng-session.h"
#include "read/nettrace-read.h"
#include "rasp-event-desc.h"
#include "rasp/events.h"
#include "trace-read.h"

extern char **environ;

static const char *prog_path, *rasp_path;
static char dir[PATH_MAX];
static pid_t running;		 /* killed by the teardown when a test fails before it ends it */
static const char *extra_env[2]; /* NAME=VALUE for the next program, or NULL */
/* `test-diag-server PROG lttng`: the tests that also record through lttng-sessiond; the
 * program then loads its LTTng provider and waits to register. */
static bool with_lttng;
/* The LTTng session of the running test: destroyed by the teardown (its trace kept) when a
 * test fails before it ends it. */
static struct rasp_test_session lsess;

struct prog {
	pid_t pid;
	char socket[PATH_MAX], out[PATH_MAX + 16], err[PATH_MAX + 16], go[PATH_MAX + 16];
	uint64_t allocations, failed, samples;
};

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
}

/* The socket file of pid in dir, or "" (none). */
static void find_socket(pid_t pid, char *out, size_t cap)
{
	char prefix[64];
	struct dirent *e;
	DIR *d = opendir(dir);

	out[0] = '\0';
	assert_non_null(d);
	snprintf(prefix, sizeof(prefix), "dotnet-diagnostic-%d-", (int)pid);
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			if ((size_t)snprintf(out, cap, "%.3000s/%.200s", dir, e->d_name) >= cap)
				fail_msg("path too long");
	closedir(d);
}

/* Called, when set, between the fork and the exec of the next program, with its pid: the
 * socket's name is known then (the pid and the start time stay across the exec). */
static void (*before_exec)(pid_t pid);

/* Starts diag-prog THREADS SECONDS [GO]: enabled or not; waits for its socket when enabled.
 * Its stdout goes to p->out, its stderr to p->err. */
static void start(struct prog *p, bool enabled, const char *threads, bool go)
{
	char tmpdir[PATH_MAX + 8];
	int gate[2];

	memset(p, 0, sizeof(*p));
	snprintf(p->out, sizeof(p->out), "%s/prog-%ld.out", dir, (long)time(NULL) ^ random());
	snprintf(p->err, sizeof(p->err), "%.4000s.err", p->out);
	snprintf(p->go, sizeof(p->go), "%s/go", dir);
	unlink(p->go);
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", dir);
	assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		const char *argv[] = {prog_path, threads, "600", go ? p->go : NULL, NULL};
		char *envp[12], byte;
		int n = 0, fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		close(gate[1]);
		if (read(gate[0], &byte, 1) != 1) /* the parent's go */
			_exit(125);

		envp[n++] = tmpdir;
		envp[n++] = enabled ? "RASP_DIAGNOSTICS=1" : "RASP_DIAGNOSTICS=0";
		/* No LTTng provider: its listener threads are not the server's; unless the test
		 * records through LTTng too, and then the program registers before it allocates. */
		envp[n++] = with_lttng ? "LTTNG_UST_REGISTER_TIMEOUT=-1" : "RASP_LTTNG=0";
		for (int i = 0; i < 2; i++)
			if (extra_env[i])
				envp[n++] = (char *)extra_env[i];
		/* The sanitizers' settings of the build pass through. */
		for (char **e = environ; *e && n < 11; e++)
			if (strstr(*e, "SAN_OPTIONS=") && strchr(*e, '=') - *e < 14)
				envp[n++] = *e;
		envp[n] = NULL;
		if (fd < 0 || dup2(fd, 1) < 0 || err < 0 || dup2(err, 2) < 0)
			_exit(126);
		execve(prog_path, (char **)argv, envp);
		_exit(127);
	}
	running = p->pid;
	close(gate[0]);
	if (before_exec)
		before_exec(p->pid);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	for (int i = 0; enabled && i < 500 && !p->socket[0]; i++) {
		sleep_ms(10);
		find_socket(p->pid, p->socket, sizeof(p->socket));
	}
	if (enabled && !p->socket[0])
		fail_msg("diag-prog %d made no socket in %s within 5 s", (int)p->pid, dir);
	/* Its first line: main runs, its signal handlers are set. */
	for (int i = 0; i < 500; i++) {
		struct stat st;

		if (stat(p->out, &st) == 0 && st.st_size > 0)
			return;
		sleep_ms(10);
	}
	fail_msg("diag-prog %d printed nothing within 5 s", (int)p->pid);
}

/* Waits (up to 10 minutes: sanitizer builds are slow) for a line of the program's output. */
static void wait_line(const struct prog *p, const char *want)
{
	for (int i = 0; i < 60000; i++) {
		char line[512];
		FILE *f = fopen(p->out, "r");
		bool found = false;

		while (f && fgets(line, sizeof(line), f))
			found |= strncmp(line, want, strlen(want)) == 0;
		if (f)
			fclose(f);
		if (found)
			return;
		sleep_ms(10);
	}
	fail_msg("diag-prog %d never printed '%s'", (int)p->pid, want);
}

/* The program's stderr, passed on to the test's. */
static void show_err(const struct prog *p)
{
	char line[512];
	FILE *f = fopen(p->err, "r");

	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "diag-prog %d: %s", (int)p->pid, line);
	if (f)
		fclose(f);
}

/* Whether the program's stderr has a line containing want. */
static bool said(const struct prog *p, const char *want)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(p->err, "r");

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* SIGTERM, then its exit status (0: every allocation made) and its counts. */
static void finish(struct prog *p)
{
	char line[512];
	int status;
	FILE *f;

	if (p->go[0])
		close(open(p->go, O_WRONLY | O_CREAT, 0644));
	kill(p->pid, SIGTERM);
	assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
	running = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("diag-prog %d: %s %d", (int)p->pid,
			 WIFEXITED(status) ? "exit status" : "killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	f = fopen(p->out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "allocations=%" SCNu64 " failed=%" SCNu64 " samples=%" SCNu64,
		       &p->allocations, &p->failed, &p->samples);
	fclose(f);
	assert_int_equal(p->failed, 0);
	show_err(p);
	/* Its socket file goes with it. */
	{
		char s[PATH_MAX];

		find_socket(p->pid, s, sizeof(s));
		assert_string_equal(s, "");
	}
}

static int connect_to(const struct prog *p)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(p->socket) < sizeof(a.sun_path));
	memcpy(a.sun_path, p->socket, strlen(p->socket) + 1);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		fail_msg("connect %s: %s", p->socket, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void send_bytes(int fd, const void *b, size_t n)
{
	assert_int_equal(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
}

static void recv_bytes(int fd, uint8_t *b, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, b, n, 0);

		if (r <= 0)
			fail_msg("reply cut short (%zd: %s)", r, strerror(errno));
		b += r;
		n -= (size_t)r;
	}
}

/* A reply: its command id (OK 0x00, error 0xFF) and payload (cap bytes). Returns its size. */
static size_t reply(int fd, uint8_t *id, uint8_t *payload, size_t cap)
{
	uint8_t h[RASP_DIAG_HEADER_SIZE];
	struct rasp_diag_header hd;

	recv_bytes(fd, h, sizeof(h));
	assert_int_equal(rasp_diag_header_parse(h, &hd), 0);
	assert_int_equal(hd.set, RASP_DIAG_SET_SERVER);
	assert_true((size_t)(hd.size - RASP_DIAG_HEADER_SIZE) <= cap);
	recv_bytes(fd, payload, hd.size - RASP_DIAG_HEADER_SIZE);
	*id = hd.id;
	return hd.size - RASP_DIAG_HEADER_SIZE;
}

static uint32_t u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t u64(const uint8_t *b)
{
	return (uint64_t)u32(b) | (uint64_t)u32(b + 4) << 32;
}

/* Sends msg on a new connection and expects the error hresult (then the connection closes). */
static void expect_error(const struct prog *p, const void *msg, size_t n, uint32_t hresult)
{
	uint8_t id, payload[64], end;
	int fd = connect_to(p);

	send_bytes(fd, msg, n);
	assert_int_equal(reply(fd, &id, payload, sizeof(payload)), 4);
	assert_int_equal(id, RASP_DIAG_SERVER_ERROR);
	assert_int_equal(u32(payload), hresult);
	assert_int_equal(recv(fd, &end, 1, 0), 0); /* closed */
	close(fd);
}

/* ProcessInfo answers with the program's pid and command line. */
static void expect_alive(const struct prog *p)
{
	uint8_t msg[RASP_DIAG_HEADER_SIZE], id, payload[8192];
	char cmdline[4096];
	uint64_t pid;
	size_t n;
	int fd = connect_to(p);

	rasp_diag_header_write(msg, sizeof(msg), RASP_DIAG_SET_PROCESS, RASP_DIAG_PROC_INFO);
	send_bytes(fd, msg, sizeof(msg));
	n = reply(fd, &id, payload, sizeof(payload));
	assert_int_equal(id, RASP_DIAG_SERVER_OK);
	assert_int_equal(rasp_diag_process_parse(payload, n, &pid, cmdline, sizeof(cmdline)), 0);
	assert_int_equal(pid, (uint64_t)p->pid);
	assert_non_null(strstr(cmdline, "diag-prog"));
	close(fd);
}

/* A session for AllocationSampled; its stream follows on *fd. */
static uint64_t collect(const struct prog *p, int *fd, uint32_t buffer_mb)
{
	struct rasp_diag_provider pv = {.keywords = UINT64_C(0x80000000000), .level = 4};
	uint8_t msg[512], id, payload[64];
	size_t n;

	snprintf(pv.name, sizeof(pv.name), "Microsoft-Windows-DotNETRuntime");
	n = rasp_diag_collect2_write(msg, sizeof(msg), buffer_mb, true, &pv, 1);
	assert_true(n > 0);
	*fd = connect_to(p);
	send_bytes(*fd, msg, n);
	assert_int_equal(reply(*fd, &id, payload, sizeof(payload)), 8);
	assert_int_equal(id, RASP_DIAG_SERVER_OK);
	assert_true(u64(payload) != 0);
	return u64(payload);
}

static void stop(const struct prog *p, uint64_t session)
{
	uint8_t msg[RASP_DIAG_HEADER_SIZE + 8], id, payload[64];
	int fd = connect_to(p);

	rasp_diag_header_write(msg, sizeof(msg), RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_STOP);
	for (int i = 0; i < 8; i++)
		msg[RASP_DIAG_HEADER_SIZE + i] = (uint8_t)(session >> (8 * i));
	send_bytes(fd, msg, sizeof(msg));
	assert_int_equal(reply(fd, &id, payload, sizeof(payload)), 8);
	assert_int_equal(id, RASP_DIAG_SERVER_OK);
	assert_int_equal(u64(payload), session);
	close(fd);
}

/* A stream copied into a file until EOF, on its own thread. */
struct copier {
	int fd;
	char path[PATH_MAX + 16];
	pthread_t th;
	uint64_t bytes;
};

static void *copy_main(void *arg)
{
	struct copier *c = arg;
	uint8_t buf[65536];
	int out = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	while ((n = recv(c->fd, buf, sizeof(buf), 0)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && write(out, buf, (size_t)n) == n)
			c->bytes += (uint64_t)n;
	close(out);
	return NULL;
}

static void copy_start(struct copier *c, int fd, const char *name)
{
	c->fd = fd;
	c->bytes = 0;
	snprintf(c->path, sizeof(c->path), "%s/%s", dir, name);
	assert_int_equal(pthread_create(&c->th, NULL, copy_main, c), 0);
}

static void copy_end(struct copier *c)
{
	pthread_join(c->th, NULL);
	close(c->fd);
}

struct seen {
	bool complete;
	uint64_t sampled, configured, lost, before_config, bad_name, pin_before, pin_after;
	uint64_t tids[64];
	size_t ntids;
};

static void read_trace(const char *path, struct seen *s)
{
	char err[1024], strs[4096];
	struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
	struct rasp_nt_item it;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!r)
		fail_msg("%s", err);
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_event_desc *d;
		union rasp_nt_value v[16];
		bool known = false;

		if (it.kind == RASP_NT_ITEM_LOST) {
			s->lost += it.lost;
			continue;
		}
		d = it.event.meta->desc;
		if (!d)
			continue;
		assert_int_equal(rasp_nt_decode(d, it.event.payload, it.event.payload_len,
						rasp_nt_info(r)->pointer_size, v, strs,
						sizeof(strs)),
				 0);
		for (size_t i = 0; i < s->ntids; i++)
			known |= s->tids[i] == it.event.thread_id;
		if (d == &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED]) {
			s->sampled++;
			s->before_config += !known;
			s->bad_name += strncmp(v[3].s, "Diag.", 5) != 0;
			s->pin_before += strcmp(v[3].s, "Pin.Before") == 0;
			s->pin_after += strcmp(v[3].s, "Pin.After") == 0;
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED]) {
			s->configured++;
			if (!known && s->ntids < 64)
				s->tids[s->ntids++] = it.event.thread_id;
		}
	}
	if (rc < 0)
		fail_msg("%s: %s", path, rasp_nt_error(r));
	s->complete = rasp_nt_complete(r);
	rasp_nt_close(r);
	printf("# %s: %" PRIu64 " samples, %" PRIu64 " SamplingConfigured, %" PRIu64
	       " lost, complete %d\n",
	       path, s->sampled, s->configured, s->lost, s->complete);
}

/* ---- tests --------------------------------------------------------------------------------- */

/* Threads of pid named rasp-diag (the server's). */
static int server_threads(pid_t pid)
{
	char task[64], path[PATH_MAX], name[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(task, sizeof(task), "/proc/%d/task", (int)pid);
	d = opendir(task);
	assert_non_null(d);
	while ((e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.32s/comm", task, e->d_name);
		f = fopen(path, "r");
		if (f && fgets(name, sizeof(name), f) && strcmp(name, "rasp-diag\n") == 0)
			n++;
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

/* Disabled: no socket file and no server thread; enabled, both. */
static void test_disabled(void **state)
{
	struct prog p;
	char s[PATH_MAX];

	(void)state;
	start(&p, false, "1", true);
	sleep_ms(300);
	find_socket(p.pid, s, sizeof(s));
	assert_string_equal(s, "");
	assert_int_equal(server_threads(p.pid), 0);
	finish(&p);
	start(&p, true, "1", true);
	assert_int_equal(server_threads(p.pid), 1);
	finish(&p);
}

/* Every malformed or unknown message gets the protocol's error; the server goes on. */
static void test_protocol_errors(void **state)
{
	uint8_t m[RASP_DIAG_HEADER_SIZE + 64], id, payload[8192];
	struct prog p;
	int fd;

	(void)state;
	start(&p, true, "2", false);
	expect_alive(&p);

	/* ProcessInfo2 and 3, ResumeRuntime. */
	for (uint8_t cmd = RASP_DIAG_PROC_INFO2; cmd <= RASP_DIAG_PROC_INFO3; cmd += 4) {
		fd = connect_to(&p);
		rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_SET_PROCESS, cmd);
		send_bytes(fd, m, RASP_DIAG_HEADER_SIZE);
		assert_true(reply(fd, &id, payload, sizeof(payload)) > 24);
		assert_int_equal(id, RASP_DIAG_SERVER_OK);
		close(fd);
	}
	fd = connect_to(&p);
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_SET_PROCESS,
			       RASP_DIAG_PROC_RESUME);
	send_bytes(fd, m, RASP_DIAG_HEADER_SIZE);
	assert_int_equal(reply(fd, &id, payload, sizeof(payload)), 4);
	assert_int_equal(id, RASP_DIAG_SERVER_OK);
	close(fd);

	/* Wrong magic; a size below the header's; unknown set; unknown command. */
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_SET_PROCESS, 0);
	m[12] = '2';
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_E_UNKNOWN_MAGIC);
	rasp_diag_header_write(m, 19, RASP_DIAG_SET_PROCESS, 0);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_E_BAD_ENCODING);
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE, 0x77, 0);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_E_UNKNOWN_COMMAND);
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_SET_PROCESS, 0x99);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE, RASP_DIAG_E_UNKNOWN_COMMAND);
	/* A CollectTracing that is garbage; one asking for NetPerf (format 0); StopTracing of
	 * a session that does not exist, and one with a short payload. */
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE + 6, RASP_DIAG_SET_EVENTPIPE,
			       RASP_DIAG_EP_COLLECT2);
	memset(m + RASP_DIAG_HEADER_SIZE, 0xEE, 6);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE + 6, RASP_DIAG_E_BAD_ENCODING);
	{
		struct rasp_diag_provider pv = {.keywords = UINT64_C(0x80000000000), .level = 4};
		uint8_t big[512];
		size_t n;

		snprintf(pv.name, sizeof(pv.name), "Microsoft-Windows-DotNETRuntime");
		n = rasp_diag_collect2_write(big, sizeof(big), 16, true, &pv, 1);
		big[RASP_DIAG_HEADER_SIZE + 4] = 0; /* format NetPerf */
		expect_error(&p, big, n, RASP_DIAG_E_NOT_SUPPORTED);
	}
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE + 8, RASP_DIAG_SET_EVENTPIPE,
			       RASP_DIAG_EP_STOP);
	memset(m + RASP_DIAG_HEADER_SIZE, 0x42, 8);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE + 8, RASP_DIAG_E_FAIL);
	rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE + 3, RASP_DIAG_SET_EVENTPIPE,
			       RASP_DIAG_EP_STOP);
	expect_error(&p, m, RASP_DIAG_HEADER_SIZE + 3, RASP_DIAG_E_BAD_ENCODING);

	/* Oversized: a header announcing 65535 bytes, then 40 and the end of the client's side:
	 * the payload never comes. */
	fd = connect_to(&p);
	rasp_diag_header_write(m, 65535, RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_COLLECT2);
	memset(m + RASP_DIAG_HEADER_SIZE, 0, 40);
	send_bytes(fd, m, RASP_DIAG_HEADER_SIZE + 40);
	shutdown(fd, SHUT_WR);
	assert_int_equal(reply(fd, &id, payload, sizeof(payload)), 4);
	assert_int_equal(id, RASP_DIAG_SERVER_ERROR);
	assert_int_equal(u32(payload), RASP_DIAG_E_BAD_ENCODING);
	close(fd);

	/* 100 connect/disconnect cycles: empty, a short header, half a command. */
	for (int i = 0; i < 100; i++) {
		fd = connect_to(&p);
		rasp_diag_header_write(m, RASP_DIAG_HEADER_SIZE + 8, RASP_DIAG_SET_EVENTPIPE,
				       RASP_DIAG_EP_STOP);
		if (i % 3)
			send_bytes(fd, m, i % 3 == 1 ? 10 : RASP_DIAG_HEADER_SIZE + 4);
		close(fd);
	}
	expect_alive(&p);
	finish(&p);
	assert_true(p.allocations > 0);
}

/* Two sessions at once: each a complete trace, nothing lost, every sample after its thread's
 * SamplingConfigured; the first stopped while the second runs on. */
static void test_two_sessions(void **state)
{
	struct copier a, b;
	struct seen sa, sb;
	struct prog p;
	uint64_t ia, ib;
	int fa, fb;

	(void)state;
	start(&p, true, "2", false);
	ia = collect(&p, &fa, 64);
	copy_start(&a, fa, "a.nettrace");
	sleep_ms(300);
	ib = collect(&p, &fb, 64);
	copy_start(&b, fb, "b.nettrace");
	assert_true(ia != ib);
	sleep_ms(700);
	stop(&p, ia);
	copy_end(&a); /* the stream ended */
	sleep_ms(500);
	stop(&p, ib);
	copy_end(&b);
	expect_alive(&p);
	finish(&p);

	read_trace(a.path, &sa);
	read_trace(b.path, &sb);
	for (struct seen *s = &sa; s; s = s == &sa ? &sb : NULL) {
		assert_true(s->complete);
		assert_true(s->sampled > 100);
		assert_true(s->configured >= 1);
		assert_int_equal(s->lost, 0);
		assert_int_equal(s->before_config, 0);
		assert_int_equal(s->bad_name, 0);
	}
}

/* A session starting between a thread's read of the epoch (after which it would announce its
 * mean) and its next sample gets none of that thread's events until its next read: without
 * the pin, a sample reached a new session ahead of its thread's SamplingConfigured (seen
 * once in a TSan run of test_two_sessions). DIAG_PIN makes the interleaving certain. */
static void test_a_new_session_waits_for_the_threads_read(void **state)
{
	struct copier c;
	struct seen s;
	struct prog p;
	uint64_t id;
	int fd;

	(void)state;
	extra_env[0] = "DIAG_PIN=1";
	start(&p, true, "1", false);
	extra_env[0] = NULL;
	wait_line(&p, "pinned");
	id = collect(&p, &fd, 64);
	copy_start(&c, fd, "pin.nettrace");
	wait_line(&p, "done");
	stop(&p, id);
	copy_end(&c);
	finish(&p);
	read_trace(c.path, &s);
	assert_true(s.complete);
	assert_int_equal(s.pin_before, 0);
	assert_int_equal(s.pin_after, 1);
}

/* Sampling stops with the session (the heap's auto mode): a second after StopTracing, the
 * program has counted hardly more samples than the session received. Counted and not sent
 * are only the samples fired while the stop is under way (its last flush; 0 in a plain build,
 * up to 390 of 28000 under TSan, which slows the stop) and between the session's end and each
 * thread's next state check (every large object here, every third allocation): 2-5% plain,
 * up to 14% seen under TSan on a loaded machine. Had sampling gone on, the second would have
 * added as many as the session's half second times two (77000 more, 275%, seen with the
 * threads blind to the session's event mask: the epoch changes only when a session starts),
 * so a bound of 25% tells the two apart with room for a slow machine. */
static void test_sampling_stops_with_the_session(void **state)
{
	struct copier c;
	struct seen s;
	struct prog p;
	uint64_t id;
	int fd;

	(void)state;
	start(&p, true, "2", false);
	id = collect(&p, &fd, 64);
	copy_start(&c, fd, "stop.nettrace");
	sleep_ms(500);
	stop(&p, id);
	copy_end(&c);
	sleep_ms(1000); /* allocating on: thousands of samples if sampling went on */
	finish(&p);
	read_trace(c.path, &s);
	printf("# counted %" PRIu64 ", received %" PRIu64 "\n", p.samples, s.sampled);
	assert_true(s.complete);
	assert_int_equal(s.lost, 0);
	assert_true(s.sampled > 100);
	assert_true(p.samples >= s.sampled);
	assert_true(p.samples - s.sampled <= s.sampled / 4);
}

/* Per thread of one process, in an LTTng trace: samples, SamplingConfigured, and samples
 * before the thread's first SamplingConfigured. */
struct lttng_seen {
	int64_t vpid;
	uint64_t sampled, configured, tids[64], announced[64];
	size_t ntids;
	uint64_t before_config, threads_unannounced;
};

static int count_lttng(const bt_event *ev, void *user)
{
	struct lttng_seen *c = user;
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	uint64_t vpid, vtid;
	size_t i;

	if (rasp_test_field_u64(rasp_test_event_context(ev, "vpid"), &vpid) ||
	    (int64_t)vpid != c->vpid ||
	    rasp_test_field_u64(rasp_test_event_context(ev, "vtid"), &vtid))
		return 0;
	for (i = 0; i < c->ntids && c->tids[i] != vtid; i++)
		;
	if (i == c->ntids) {
		if (i == 64)
			return 0;
		c->tids[c->ntids++] = vtid;
	}
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0) {
		c->sampled++;
		c->before_config += !c->announced[i];
	} else if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0) {
		c->configured++;
		c->announced[i] = 1;
	}
	return 0;
}

/* An LTTng session that enables SamplingConfigured while an EventPipe session already listens
 * gets every sampling thread's mean: each thread announces at its next state check, though its
 * sampling state (on, the same mean) did not change. When one flag said "someone listens" for
 * both sides, the LTTng session got samples and no announcement (the fix of e165d20). The
 * EventPipe session meanwhile sees every sample after its thread's announcement. */
static void test_an_lttng_session_beside_eventpipe(void **state)
{
	static const char *const events[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
					     RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG,
					     NULL};
	struct rasp_test_session *ls = &lsess;
	struct lttng_seen lt;
	struct copier c;
	struct seen s;
	struct prog p;
	uint64_t id;
	int fd;

	(void)state;
	memset(&lt, 0, sizeof(lt));
	start(&p, true, "2", false);
	id = collect(&p, &fd, 64);
	copy_start(&c, fd, "beside.nettrace");
	sleep_ms(300); /* the threads sample for EventPipe and have announced there */
	assert_int_equal(rasp_test_session_start(ls, events), 0);
	sleep_ms(1000);
	assert_int_equal(rasp_test_session_stop(ls), 0);
	stop(&p, id);
	copy_end(&c);
	finish(&p);
	read_trace(c.path, &s);
	lt.vpid = p.pid;
	assert_true(rasp_test_trace_foreach(ls->dir, count_lttng, &lt, NULL) >= 0);
	for (size_t i = 0; i < lt.ntids; i++)
		lt.threads_unannounced += !lt.announced[i];
	printf("# EventPipe: %" PRIu64 " samples, %" PRIu64 " announcements; LTTng: %" PRIu64
	       " samples from %zu threads, %" PRIu64 " announcements, %" PRIu64
	       " samples before their thread's\n",
	       s.sampled, s.configured, lt.sampled, lt.ntids, lt.configured, lt.before_config);
	assert_true(s.complete);
	assert_int_equal(s.lost, 0);
	assert_int_equal(s.before_config, 0);
	assert_true(lt.sampled > 100);
	/* Every thread that sampled into the LTTng session announced to it. Samples may come
	 * before the announcement: a thread fires into a session as soon as it enables the
	 * event, and adopts the session at its next state check, within a quantum. */
	assert_int_equal(lt.threads_unannounced, 0);
	assert_true(lt.configured >= 2);
	assert_true(lt.before_config < lt.sampled / 2);
	rasp_test_session_destroy(ls, 0);
}

/* A client that goes away mid-stream ends its session; the next one works. A client that
 * does not read loses events of its own session, counted in its trace; the program goes on. */
static void test_vanishing_and_slow_clients(void **state)
{
	struct copier c;
	struct seen s;
	struct prog p;
	uint8_t buf[1024];
	uint64_t id;
	int fd;

	(void)state;
	start(&p, true, "2", false);
	id = collect(&p, &fd, 64);
	recv_bytes(fd, buf, sizeof(buf));
	close(fd);
	sleep_ms(300);
	expect_alive(&p);

	finish(&p);

	/* The smallest queue (4 MiB), unread while two threads make 100,000 allocations each
	 * with nearly every one sampled (a mean of 8 bytes): some 200,000 events, far more than
	 * 4 MiB, however fast the build runs. */
	extra_env[0] = "RASP_SAMPLING_MEAN=8";
	extra_env[1] = "DIAG_COUNT=100000";
	start(&p, true, "2", false);
	extra_env[0] = extra_env[1] = NULL;
	id = collect(&p, &fd, 1);
	wait_line(&p, "done");
	copy_start(&c, fd, "slow.nettrace");
	sleep_ms(300);
	stop(&p, id);
	copy_end(&c);
	finish(&p);
	read_trace(c.path, &s);
	assert_true(s.complete);
	assert_true(s.sampled > 0);
	assert_int_equal(s.before_config, 0);
	/* The session dropped some, and says how many. */
	printf("# slow client: %" PRIu64 " samples written, %" PRIu64 " lost, %" PRIu64
	       " fired in all\n",
	       s.sampled, s.lost, p.samples);
	assert_true(s.lost > 0);
}

/* The program exits while a session streams: the stream ends with its end tag. */
static void test_exit_mid_session(void **state)
{
	struct copier c;
	struct seen s;
	struct prog p;
	int fd;

	(void)state;
	start(&p, true, "2", false);
	collect(&p, &fd, 64);
	copy_start(&c, fd, "exit.nettrace");
	sleep_ms(500);
	finish(&p);
	copy_end(&c);
	read_trace(c.path, &s);
	assert_true(s.complete);
	assert_true(s.sampled > 0);
	assert_int_equal(s.lost, 0);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The server ended the connection (EOF or reset waiting), without waiting. */
static bool closed_by_server(int fd)
{
	struct pollfd q = {.fd = fd, .events = POLLIN | POLLRDHUP};

	return poll(&q, 1, 0) == 1;
}

/* A client that sends its command a byte every 1.5 s, and eight that stall halfway through
 * their header, do not hold the server: another client's ProcessInfo is answered while they
 * all still hold their connections, and each is closed once its 2 s for the whole command
 * are over (with a limit per recv instead, the slow one would hold a lone thread
 * indefinitely). */
static void test_slow_clients_do_not_hold_the_server(void **state)
{
	uint8_t m[RASP_DIAG_HEADER_SIZE];
	int stuck[8], slow;
	size_t sent = 0;
	struct prog p;
	double t0, end = 0;

	(void)state;
	start(&p, true, "1", false);
	rasp_diag_header_write(m, sizeof(m), RASP_DIAG_SET_PROCESS, RASP_DIAG_PROC_INFO);
	for (int i = 0; i < 8; i++) {
		stuck[i] = connect_to(&p);
		send_bytes(stuck[i], m, 10);
	}
	slow = connect_to(&p);
	t0 = now_s();
	send_bytes(slow, m, 1);
	sent = 1;
	expect_alive(&p);
	for (int i = 0; i < 8; i++)
		assert_false(closed_by_server(stuck[i]));
	assert_false(closed_by_server(slow));
	/* A byte every 1.5 s: the header would take 30 s; the guard ends it at 12 s. */
	while (now_s() - t0 < 12) {
		struct pollfd q = {.fd = slow, .events = POLLIN | POLLRDHUP};

		if (poll(&q, 1, 1500) == 1 ||
		    send(slow, m + sent, 1, MSG_NOSIGNAL) != 1 /* closed meanwhile */) {
			end = now_s();
			break;
		}
		sent++;
	}
	printf("# the slow client, %zu bytes sent, was closed after %.2f s\n", sent, end - t0);
	assert_true(end > 0);
	assert_true(sent < RASP_DIAG_HEADER_SIZE);
	for (int i = 0; i < 8; i++) {
		assert_true(closed_by_server(stuck[i]));
		close(stuck[i]);
	}
	close(slow);
	expect_alive(&p);
	finish(&p);
}

struct stopper {
	const struct prog *p;
	uint64_t id;
	pthread_t th;
	_Atomic bool replied;
};

static void *stop_main(void *arg)
{
	struct stopper *s = arg;

	stop(s->p, s->id);
	s->replied = true;
	return NULL;
}

/* A StopTracing whose session's client does not read waits (up to 5 s) for that client to
 * take the stream's end; meanwhile another client's ProcessInfo is answered (the server's only
 * thread would wait with it). */
static void test_a_waiting_stop_does_not_hold_the_server(void **state)
{
	struct stopper st = {0};
	struct prog p;
	int fd;

	(void)state;
	/* Nearly every allocation sampled, unread: the 4 MiB queue and the socket fill up. */
	extra_env[0] = "RASP_SAMPLING_MEAN=8";
	extra_env[1] = "DIAG_COUNT=100000";
	start(&p, true, "2", false);
	extra_env[0] = extra_env[1] = NULL;
	st.p = &p;
	st.id = collect(&p, &fd, 1);
	wait_line(&p, "done");
	assert_int_equal(pthread_create(&st.th, NULL, stop_main, &st), 0);
	sleep_ms(300);
	expect_alive(&p);
	assert_false(st.replied); /* the stop still waits for its client */
	pthread_join(st.th, NULL);
	close(fd);
	finish(&p);
}

/* 16 sessions, 15 of whose clients never read, and the program exits: their streams' ends are
 * sent at once, so the exit waits 5 s for all of them (docs/diagnostics.md), not 5 s each
 * (80 s); the reading client still gets a complete stream. */
static void test_exit_with_clients_that_do_not_read(void **state)
{
	struct copier c;
	struct seen s;
	struct prog p;
	int fds[15], status = 0;
	double t0, took = -1;

	(void)state;
	extra_env[0] = "RASP_SAMPLING_MEAN=8";
	extra_env[1] = "DIAG_COUNT=100000";
	start(&p, true, "2", false);
	extra_env[0] = extra_env[1] = NULL;
	for (int i = 0; i < 15; i++)
		collect(&p, &fds[i], 1);
	collect(&p, &c.fd, 64);
	copy_start(&c, c.fd, "reader.nettrace");
	wait_line(&p, "done");
	sleep_ms(500); /* the unread sockets fill */
	t0 = now_s();
	kill(p.pid, SIGTERM);
	/* Hang guard: 60 s (with the drains one after another, the exit would take 80 s). */
	while (now_s() - t0 < 60) {
		pid_t w = waitpid(p.pid, &status, WNOHANG);

		if (w == p.pid) {
			took = now_s() - t0;
			running = 0;
			break;
		}
		sleep_ms(20);
	}
	show_err(&p);
	printf("# exit with 15 clients that do not read: %.2f s\n", took);
	assert_true(took >= 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The documented 5 s, and room for a sanitizer build's exit on a loaded machine (up to
	 * 12.5 s seen under TSan): half of what the drains one after another would take. */
	assert_true(took < 40);
	copy_end(&c);
	for (int i = 0; i < 15; i++)
		close(fds[i]);
	read_trace(c.path, &s);
	assert_true(s.complete);
	assert_true(s.sampled > 0);
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks: the socket's key. */
static unsigned long long start_key_of(pid_t pid)
{
	char path[64], buf[1024], *q;
	unsigned long long key = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	q = strrchr(buf, ')');
	assert_non_null(q);
	for (int field = 3; field <= 22 && q; field++)
		q = strchr(q + 1, ' ');
	assert_non_null(q);
	key = strtoull(q + 1, NULL, 10);
	assert_true(key > 0);
	return key;
}

static char planted[PATH_MAX];
static enum { PLANT_FILE, PLANT_OTHERS_SOCKET, PLANT_OWN_SOCKET } plant_kind;

/* Puts a file at the socket path of pid before its program starts. */
static void plant(pid_t pid)
{
	snprintf(planted, sizeof(planted), "%.3000s/dotnet-diagnostic-%d-%llu-socket", dir,
		 (int)pid, start_key_of(pid));
	if (plant_kind == PLANT_FILE) {
		FILE *f = fopen(planted, "w");

		assert_non_null(f);
		fputs("planted\n", f);
		fclose(f);
		/* Another user's, when the test can give it away (as root). */
		if (geteuid() == 0)
			assert_int_equal(chown(planted, 65534, 65534), 0);
	} else {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		memcpy(a.sun_path, planted, strlen(planted) + 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		close(fd); /* a socket file nobody listens on: one a process left */
		if (plant_kind == PLANT_OTHERS_SOCKET)
			assert_int_equal(chown(planted, 65534, 65534), 0);
	}
}

/* What is at the socket's path before the server starts: a file (another user's, when the
 * test runs as root) or another user's socket stays untouched, and the program says on
 * stderr that it runs without a server, naming the path; a socket of the program's user
 * (an earlier image of the same process left it) is replaced and served. */
static void test_a_planted_file(void **state)
{
	struct stat st;
	struct prog p;

	(void)state;
	before_exec = plant;
	plant_kind = PLANT_FILE;
	start(&p, true, "1", false);
	before_exec = NULL;
	wait_line(&p, "allocating");
	show_err(&p);
	assert_true(said(&p, planted));
	assert_true(said(&p, "no diagnostic server"));
	assert_int_equal(lstat(planted, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 8); /* "planted\n", as it was */
	assert_int_equal(server_threads(p.pid), 0);
	p.socket[0] = '\0';
	kill(p.pid, SIGTERM);
	assert_int_equal(waitpid(p.pid, NULL, 0), p.pid);
	running = 0;
	assert_int_equal(unlink(planted), 0);

	if (geteuid() == 0) {
		before_exec = plant;
		plant_kind = PLANT_OTHERS_SOCKET;
		start(&p, true, "1", false);
		before_exec = NULL;
		wait_line(&p, "allocating");
		assert_true(said(&p, planted));
		assert_int_equal(lstat(planted, &st), 0);
		assert_true(S_ISSOCK(st.st_mode) && st.st_uid == 65534);
		assert_int_equal(server_threads(p.pid), 0);
		kill(p.pid, SIGTERM);
		assert_int_equal(waitpid(p.pid, NULL, 0), p.pid);
		running = 0;
		assert_int_equal(unlink(planted), 0);
	} else {
		printf("# not root: another user's socket is not tried\n");
	}

	before_exec = plant;
	plant_kind = PLANT_OWN_SOCKET;
	start(&p, true, "1", false);
	before_exec = NULL;
	assert_string_equal(p.socket, planted);
	wait_line(&p, "allocating");
	expect_alive(&p);
	assert_false(said(&p, "diagnostics"));
	finish(&p);
}

/* The pids `rasp ps` lists (TMPDIR: the test's directory), into pids; their count. */
static size_t ps(pid_t *pids, size_t cap)
{
	char cmd[2 * PATH_MAX + 64], line[4200];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "TMPDIR='%s' '%s' ps 2>/dev/null", dir, rasp_path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (n < cap && sscanf(line, "%d", &pids[n]) == 1)
			n++;
	assert_int_equal(pclose(f), 0);
	return n;
}

static bool lists(pid_t pid)
{
	pid_t v[64];
	size_t n = ps(v, 64);

	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/* Sockets among the open descriptors of pid. */
static int sockets_of(pid_t pid)
{
	char path[64], link[PATH_MAX], target[128];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%.32s", path, e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strncmp(target, "socket:", 7) == 0;
		}
	}
	closedir(d);
	return n;
}

/* Waits until pid runs an image other than prog (its exec happened). */
static void wait_exec(pid_t pid)
{
	char path[64], exe[PATH_MAX], real[PATH_MAX];

	assert_non_null(realpath(prog_path, real));
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 1000; i++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);

		if (n > 0) {
			exe[n] = '\0';
			if (strcmp(exe, real) != 0)
				return;
		}
		sleep_ms(10);
	}
	fail_msg("process %d did not exec within 10 s", (int)pid);
}

/* A program whose server runs execs another program: the socket file stays (the same pid and
 * start time name it; no code of the old image runs at the exec to remove it), nobody listens
 * on it (a connect is refused) and `rasp ps`, which listed the process, no longer does. A
 * program that execs a rasp program with the server on gets the path back and is served. */
static void test_exec(void **state)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char cmd[PATH_MAX + 32];
	struct stat st;
	struct prog p;
	int fd;

	(void)state;
	/* Into a program that is not a rasp program. */
	extra_env[0] = "DIAG_EXEC=/bin/sleep 600";
	start(&p, true, "1", true);
	extra_env[0] = NULL;
	wait_line(&p, "exec");
	wait_exec(p.pid);
	/* /proc shows the new image a moment before the kernel closes the old one's close-on-exec
	 * descriptors (set_mm_exe_file, then do_close_on_exec): until then the listening socket
	 * still takes connections. /bin/sleep has no socket of its own. 10 s at most. */
	for (int i = 0; i < 1000 && sockets_of(p.pid) > 0; i++)
		sleep_ms(10);
	assert_int_equal(sockets_of(p.pid), 0);
	assert_int_equal(lstat(p.socket, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(a.sun_path, p.socket, strlen(p.socket) + 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(fd);
	assert_false(lists(p.pid));
	kill(p.pid, SIGKILL);
	assert_int_equal(waitpid(p.pid, NULL, 0), p.pid);
	running = 0;
	unlink(p.socket);

	/* Into a rasp program with the server on: the same path, served again. */
	snprintf(cmd, sizeof(cmd), "DIAG_EXEC=%s 1 600", prog_path);
	extra_env[0] = cmd;
	start(&p, true, "1", false);
	extra_env[0] = NULL;
	wait_line(&p, "allocating"); /* the new image's */
	assert_true(lists(p.pid));
	expect_alive(&p);
	assert_false(said(&p, "diagnostics"));
	finish(&p);
}

/* The program forks while a client's connection is open: the child keeps no copy of the
 * listening socket or of the connection, so the client sees its connection end when the
 * server ends it (after its 2 s), and the listener's only holder is the program. */
static void test_a_fork_keeps_no_socket(void **state)
{
	char line[512];
	pid_t child = 0;
	struct prog p;
	double t0;
	FILE *f;
	int fd;

	(void)state;
	extra_env[0] = "DIAG_FORK=1";
	start(&p, true, "1", true);
	extra_env[0] = NULL;
	fd = connect_to(&p);
	send_bytes(fd, "DOTNET", 6); /* half a header: the server holds the connection */
	sleep_ms(200);
	t0 = now_s();
	close(open(p.go, O_WRONLY | O_CREAT, 0644));
	wait_line(&p, "forked");
	wait_line(&p, "child forked"); /* its fork handlers have run */
	f = fopen(p.out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "forked %d", &child);
	fclose(f);
	assert_true(child > 0);
	assert_int_equal(sockets_of(child), 0);
	/* Hang guard: 10 s; the server closes it 2 s after its connect. */
	while (!closed_by_server(fd) && now_s() - t0 < 10)
		sleep_ms(20);
	assert_true(closed_by_server(fd));
	close(fd);
	expect_alive(&p);
	finish(&p);
}

/* A forked child that forks again (a daemon's double fork, a shell's pipeline): the child's
 * own descriptors, one of them on the number of the listening socket it closed at its fork,
 * are all still open in the grandchild. */
static void test_a_fork_of_the_child_keeps_its_descriptors(void **state)
{
	char line[512];
	int kept = -1;
	struct prog p;
	FILE *f;

	(void)state;
	extra_env[0] = "DIAG_FORK=2";
	start(&p, true, "1", true);
	extra_env[0] = NULL;
	close(open(p.go, O_WRONLY | O_CREAT, 0644));
	wait_line(&p, "grandchild kept");
	f = fopen(p.out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "grandchild kept %d", &kept);
	fclose(f);
	assert_int_equal(kept, 16);
	expect_alive(&p);
	finish(&p);
}

static int teardown(void **state)
{
	(void)state;
	if (running) {
		kill(running, SIGKILL);
		waitpid(running, NULL, 0);
		running = 0;
	}
	if (lsess.created)
		rasp_test_session_destroy(&lsess, 1);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_disabled, teardown),
	    cmocka_unit_test_teardown(test_protocol_errors, teardown),
	    cmocka_unit_test_teardown(test_two_sessions, teardown),
	    cmocka_unit_test_teardown(test_a_new_session_waits_for_the_threads_read, teardown),
	    cmocka_unit_test_teardown(test_sampling_stops_with_the_session, teardown),
	    cmocka_unit_test_teardown(test_vanishing_and_slow_clients, teardown),
	    cmocka_unit_test_teardown(test_exit_mid_session, teardown),
	    cmocka_unit_test_teardown(test_slow_clients_do_not_hold_the_server, teardown),
	    cmocka_unit_test_teardown(test_a_waiting_stop_does_not_hold_the_server, teardown),
	    cmocka_unit_test_teardown(test_exit_with_clients_that_do_not_read, teardown),
	    cmocka_unit_test_teardown(test_a_planted_file, teardown),
	    cmocka_unit_test_teardown(test_exec, teardown),
	    cmocka_unit_test_teardown(test_a_fork_keeps_no_socket, teardown),
	    cmocka_unit_test_teardown(test_a_fork_of_the_child_keeps_its_descriptors, teardown),
	};
	const struct CMUnitTest lttng_tests[] = {
	    cmocka_unit_test_teardown(test_an_lttng_session_beside_eventpipe, teardown),
	};
	char tmpl[] = "/tmp/rasp-diag-XXXXXX";

	if (argc != 3 && (argc != 4 || strcmp(argv[3], "lttng") != 0)) {
		fprintf(stderr, "usage: test-diag-server DIAG-PROG RASP [lttng]\n");
		return 2;
	}
	prog_path = argv[1];
	rasp_path = argv[2];
	with_lttng = argc == 4;
	if (!mkdtemp(tmpl))
		return 1;
	snprintf(dir, sizeof(dir), "%s", tmpl);
	signal(SIGPIPE, SIG_IGN);
	if (with_lttng)
		return cmocka_run_group_tests_name("lttng", lttng_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
