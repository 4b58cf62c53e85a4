/* rasp record -p PID and rasp report --live -p PID: a session started in a running process over
 * its diagnostic socket (diag-client.c), its NetTrace stream written to a file as it arrives,
 * until Ctrl-C, the duration or the process's exit; then the report of that file. Works on a
 * .NET program and on a rasp program with its diagnostic server on alike: both speak .NET's
 * protocol. */
#define _GNU_SOURCE
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "diag-client.h"
#include "diag-protocol.h"
#include "write/sanitize.h"

/* Connecting and the answer to CollectTracing (the target answers at once; a busy one may
 * take a while to be scheduled). */
#define START_TIMEOUT_S 30
/* After StopTracing: how long the process may take to end its stream (a .NET program runs
 * its rundown first), and how much it may send meanwhile. A session's end is its last
 * events (the client reads all along, so little waits) and .NET's rundown, a few MiB for a
 * large program: more is a process that does not stop, and is not written. */
#define END_TIMEOUT_S 60
#define TAIL_LIMIT    (UINT64_C(64) << 20)
#define POLL_MS	      100

/* SIGINT and SIGTERM received: the first stops the session, the second stops waiting.
 * Atomic: the stop's thread reads it too. */
static atomic_int interrupted;
/* Set by the main thread when it no longer waits for the stop's answer. */
static atomic_bool give_up;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&interrupted, 1);
}

/* The temporary file of --live, removed by on_fatal when a signal ends rasp while it exists
 * (a hangup at any time; Ctrl-C during the final report). */
static char temp_path[PATH_MAX];

static void on_fatal(int sig)
{
	unlink(temp_path);
	raise(sig); /* SA_RESETHAND: the default action, once this returns */
}

/* The start ends at the first signal, the stop at the second or when given up. */
static bool start_cancelled(void *arg)
{
	(void)arg;
	return atomic_load(&interrupted) > 0;
}

static bool stop_cancelled(void *arg)
{
	(void)arg;
	return atomic_load(&interrupted) > 1 || atomic_load(&give_up);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The process's command line, for the first message. */
static void command_line(pid_t pid, char *out, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(out, cap, "?");
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, cap - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && out[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	out[n] = '\0';
	rasp_safe_in_place(out, cap); /* the program's own text: no escape reaches the terminal */
}

/* The stop: sent once, on its own connection, from its own thread, so the stream keeps being
 * read meanwhile (the process writes its last blocks, and .NET its rundown, before it
 * answers: waiting for the answer without reading would deadlock). The thread blocks every
 * signal, so that they interrupt the main thread's poll, and its waits end at a second
 * signal or when the main thread gives up: joining it takes at most 100 ms then. */
struct stopper {
	const char *cmd, *socket;
	pid_t pid;
	uint64_t session;
	bool sent;
	double since;
	pthread_t th;
};

static void *stop_main(void *arg)
{
	struct stopper *s = arg;
	struct rasp_diag_wait w = {.timeout_s = END_TIMEOUT_S, .cancelled = stop_cancelled};

	/* A refusal (the process ending at that moment) is said; the stream ends anyway. */
	rasp_diag_stop(s->cmd, s->socket, s->pid, &w, s->session);
	return NULL;
}

static void stop_session(struct stopper *s, const char *why)
{
	sigset_t all, old;
	int rc;

	if (s->sent)
		return;
	s->sent = true;
	s->since = now_s();
	fprintf(stderr, "rasp %s: %s: stopping the session\n", s->cmd, why);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->th, NULL, stop_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		rasp_cli_error(s->cmd, "cannot start the stop's thread: %s", strerror(rc));
		s->sent = false;
	}
}

static void refresh(const struct rasp_attach *a, const char *path, double elapsed)
{
	/* Clear the terminal, then the table of what has arrived so far. */
	printf("\033[H\033[2J");
	printf("rasp report --live: process %d, %.0f s so far (Ctrl-C ends)\n", (int)a->pid,
	       elapsed);
	fflush(stdout);
	if (a->redraw)
		a->redraw(a->ctx, path, true);
	else
		a->report(path);
	fflush(stdout);
}

/* The output: a.output (never an existing file), a dated name, or with --live and no name a
 * temporary file (0600, a name nobody can guess, removed at the end). Its descriptor, or -1
 * after a message. */
static int open_output(const struct rasp_attach *a, char *path, size_t cap, bool *temporary)
{
	int fd;

	*temporary = false;
	if (a->output) {
		snprintf(path, cap, "%s", a->output);
	} else if (a->live) {
		const char *tmp = getenv("TMPDIR");

		snprintf(path, cap, "%s/rasp-live-XXXXXX.nettrace", tmp && *tmp ? tmp : "/tmp");
		fd = mkostemps(path, (int)strlen(".nettrace"), O_CLOEXEC);
		if (fd < 0)
			rasp_cli_error(a->cmd, "cannot create a temporary file in %s: %s",
				       tmp && *tmp ? tmp : "/tmp", strerror(errno));
		*temporary = fd >= 0;
		return fd;
	} else {
		time_t t = time(NULL);
		struct tm tm;
		char stamp[32];

		localtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(path, cap, "rasp-%d-%s.nettrace", (int)a->pid, stamp);
	}
	/* An existing file is somebody's trace: never overwritten. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		rasp_cli_error(a->cmd, "cannot create '%s': %s%s", path, strerror(errno),
			       errno == EEXIST ? " (choose another with -o)" : "");
	return fd;
}

int rasp_cli_attach(const struct rasp_attach *a)
{
	char socket_path[4200], cmdline[512], path[PATH_MAX];
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term, old_hup;
	struct stopper stop = {.cmd = a->cmd, .pid = a->pid};
	struct rasp_diag_wait start_wait = {.timeout_s = START_TIMEOUT_S,
					    .cancelled = start_cancelled};
	uint8_t buf[65536];
	uint64_t bytes = 0, tail = 0;
	double start, last_refresh;
	bool ended = false, abandoned = false, temporary;
	int fd, out, rc;

	if (!a->report && !a->redraw)
		return 2;
	if (rasp_diag_find_socket(a->cmd, a->pid, socket_path, sizeof(socket_path)) != 0)
		return 1;
	out = open_output(a, path, sizeof(path), &temporary);
	if (out < 0)
		return 2;
	if (temporary) {
		struct sigaction fatal = {.sa_handler = on_fatal, .sa_flags = SA_RESETHAND};

		snprintf(temp_path, sizeof(temp_path), "%s", path);
		sigemptyset(&fatal.sa_mask);
		sigaction(SIGHUP, &fatal, &old_hup);
	}
	command_line(a->pid, cmdline, sizeof(cmdline));
	/* From here a signal is counted, not fatal: the first one cancels the start (and the
	 * empty file goes), or stops the session. */
	atomic_store(&interrupted, 0);
	atomic_store(&give_up, false);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (rasp_diag_start(a->cmd, socket_path, a->pid, &start_wait, &fd, &stop.session) != 0) {
		close(out);
		unlink(path);
		temp_path[0] = '\0';
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		if (temporary)
			sigaction(SIGHUP, &old_hup, NULL);
		return 1;
	}
	stop.socket = socket_path;
	fprintf(stderr, "rasp %s: recording process %d (%s) into %s%s\n", a->cmd, (int)a->pid,
		cmdline, path, a->duration > 0 ? "" : "; Ctrl-C stops");
	start = last_refresh = now_s();

	while (!ended && !abandoned) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		double t;

		rc = poll(&p, 1, POLL_MS);
		if (rc < 0 && errno != EINTR) {
			rasp_cli_error(a->cmd, "poll: %s", strerror(errno));
			break;
		}
		if (rc > 0) {
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (n == 0) {
				ended = true;
			} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
				rasp_cli_error(a->cmd, "reading the stream: %s", strerror(errno));
				break;
			} else if (n > 0 && stop.sent && (tail += (uint64_t)n) > TAIL_LIMIT) {
				rasp_cli_error(a->cmd,
					       "process %d sent more than %" PRIu64
					       " MiB after StopTracing, more than a session's end: "
					       "not writing more",
					       (int)a->pid, TAIL_LIMIT >> 20);
				abandoned = true;
			} else if (n > 0) {
				rc = write_all(out, buf, (size_t)n);
				if (rc) {
					rasp_cli_error(a->cmd, "writing '%s': %s", path,
						       strerror(-rc));
					stop_session(&stop, "the output cannot be written");
					abandoned = true;
				}
				bytes += (uint64_t)n;
			}
		}
		t = now_s();
		if (abandoned)
			break;
		if (atomic_load(&interrupted) > 1 ||
		    (stop.sent && t - stop.since > END_TIMEOUT_S)) {
			fprintf(stderr, "rasp %s: not waiting for the end of the stream\n", a->cmd);
			abandoned = true;
		} else if (atomic_load(&interrupted)) {
			stop_session(&stop, "interrupted");
		} else if (a->duration > 0 && t - start >= a->duration) {
			stop_session(&stop, "duration reached");
		}
		if (a->live && !ended && !abandoned && t - last_refresh >= a->interval) {
			refresh(a, path, t - start);
			last_refresh = t;
		}
	}
	close(fd);
	close(out);
	atomic_store(&give_up, true);
	if (stop.sent)
		pthread_join(stop.th, NULL); /* within 100 ms: its waits see give_up */
	if (temporary) {
		/* The final report may take a while: a signal then ends rasp, file removed. */
		struct sigaction fatal = {.sa_handler = on_fatal, .sa_flags = SA_RESETHAND};

		sigemptyset(&fatal.sa_mask);
		sigaction(SIGINT, &fatal, NULL);
		sigaction(SIGTERM, &fatal, NULL);
	} else {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	fprintf(stderr, "rasp %s: %" PRIu64 " bytes in %s over %.1f s%s\n", a->cmd, bytes,
		temporary ? "a temporary file" : path, now_s() - start,
		ended ? "" : "; the stream did not end: the trace is INCOMPLETE");
	if (a->live)
		printf("\033[H\033[2J");
	/* Interrupted twice: the user wants out now, not after a report of what came. */
	if (atomic_load(&interrupted) > 1) {
		if (!temporary)
			fprintf(stderr, "rasp %s: interrupted: 'rasp report %s' reports it\n",
				a->cmd, path);
		rc = 1;
	} else {
		rc = a->redraw ? a->redraw(a->ctx, path, false) : a->report(path);
		rc = rc ? rc : ended ? 0 : 1;
	}
	if (temporary) {
		unlink(path);
		temp_path[0] = '\0';
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
	}
	return rc;
}
