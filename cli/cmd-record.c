/* rasp record: runs a program under an LTTng session that records its sampled allocations,
 * then says where the trace is, how many events it holds and how many were lost. The
 * program's exit status is passed through, as `perf record` does. */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char usage[] =
    "usage: rasp record [-o DIR] [-a] [--mean BYTES] [--seed N] [--subbuf-size BYTES]\n"
    "                   [--num-subbuf N] -- PROGRAM [ARGS...]\n"
    "Runs PROGRAM under an LTTng session recording DotNETRuntime:AllocationSampled and\n"
    "rasp's own events (contexts vpid, vtid, procname), then prints the trace directory,\n"
    "the number of events and the number of discarded events. Exits with PROGRAM's status\n"
    "(128+N when a signal N ended it; signals sent to rasp are passed on to PROGRAM).\n"
    "  -a, --all            record every process of this user while PROGRAM runs, not only\n"
    "                       PROGRAM's own process (for programs started by PROGRAM, or already\n"
    "                       running, e.g. `rasp record -a -- sleep 30`)\n"
    "  -o, --output DIR     trace directory (default: rasp-YYYYMMDD-HHMMSS); must not exist\n"
    "                       or be empty\n"
    "  --mean BYTES         sampling mean for rasp programs (RASP_SAMPLING_MEAN; K/M/G ok)\n"
    "  --seed N             fixed sampling seed for reproducible runs (RASP_SEED)\n"
    "  --subbuf-size BYTES  per-CPU sub-buffer size, power of 2 (default 2M)\n"
    "  --num-subbuf N       sub-buffers per CPU, power of 2 (default 8)\n"
    "A session daemon is started when none is running.\n";

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* PROGRAM as posix_spawnp would find it; 0 if found and executable. */
static int find_program(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? 0 : -errno;
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", prog) <
			(int)sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return 0;
		path += len + (path[len] == ':');
	}
	return -ENOENT;
}

/* The output directory, absolute; it must not exist, or be an empty directory. */
static int prepare_output(const char *cmd, const char *requested, char *out, size_t len)
{
	char name[64], cwd[PATH_MAX];
	struct stat st;

	if (!requested) {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(name, sizeof(name), "rasp-%Y%m%d-%H%M%S", &tm);
		requested = name;
	}
	if (requested[0] == '/') {
		snprintf(out, len, "%s", requested);
	} else {
		if (!getcwd(cwd, sizeof(cwd))) {
			rasp_cli_error(cmd, "cannot get the current directory: %s",
				       strerror(errno));
			return -errno;
		}
		if (snprintf(out, len, "%s/%s", cwd, requested) >= (int)len) {
			rasp_cli_error(cmd, "output path '%s' is too long", requested);
			return -ENAMETOOLONG;
		}
	}
	if (stat(out, &st) == 0) {
		DIR *d = S_ISDIR(st.st_mode) ? opendir(out) : NULL;
		struct dirent *e;
		int entries = 0;

		if (!d) {
			rasp_cli_error(cmd, "output '%s' exists and is not a directory", out);
			return -EEXIST;
		}
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				entries++;
		closedir(d);
		if (entries) {
			rasp_cli_error(
			    cmd, "output directory '%s' is not empty; choose another with -o", out);
			return -EEXIST;
		}
	}
	return 0;
}

/* environ plus `extra`, where an extra NAME=VALUE replaces an inherited NAME (the caller
 * leaves out of `extra` what the user's own setting should win for). */
static char **child_env(char **extra, size_t n_extra)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + n_extra + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t name_len = strcspn(environ[i], "=");
		bool replaced = false;

		for (size_t k = 0; k < n_extra; k++)
			if (strncmp(extra[k], environ[i], name_len + 1) == 0)
				replaced = true;
		if (!replaced)
			env[j++] = environ[i];
	}
	for (size_t k = 0; k < n_extra; k++)
		env[j++] = extra[k];
	env[j] = NULL;
	return env;
}

/* --- the program: forked, held until the session tracks it, then exec'd ------------------ */

struct child {
	pid_t pid;
	int go_fd;  /* write a byte: exec; close: give up */
	int err_fd; /* exec's errno, or EOF when exec succeeded */
};

/* Signals rasp handles synchronously while the program runs (sigwaitinfo, no handler): no
 * async-signal-safety or errno hazards, and sanitizers that defer handlers see them at once. */
static sigset_t watched, saved_mask;

static void watch_signals(void)
{
	sigemptyset(&watched);
	sigaddset(&watched, SIGINT);
	sigaddset(&watched, SIGQUIT);
	sigaddset(&watched, SIGTERM);
	sigaddset(&watched, SIGHUP);
	sigaddset(&watched, SIGCHLD);
	sigprocmask(SIG_BLOCK, &watched, &saved_mask);
}

static void unwatch_signals(void)
{
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

static int child_fork(const char *cmd, char **argv, char **env, struct child *ch)
{
	int go[2], err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) != 0) {
		rasp_cli_error(cmd, "cannot create a pipe: %s", strerror(errno));
		return -errno;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		rasp_cli_error(cmd, "cannot create a pipe: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		rasp_cli_error(cmd, "cannot fork: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -errno;
	}
	if (pid == 0) {
		char go_byte;
		int e;

		/* Only async-signal-safe calls from here to exec. The program gets the signal
		 * mask rasp had before watching. */
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		if (read(go[0], &go_byte, 1) != 1)
			_exit(127);
		execvpe(argv[0], argv, env);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	ch->pid = pid;
	ch->go_fd = go[1];
	ch->err_fd = err[0];
	return 0;
}

/* Lets the program exec; returns 0 once it did, or exec's error. */
static int child_wait(struct child *ch);

static int child_release(struct child *ch)
{
	int e = 0;
	ssize_t n;

	if (write(ch->go_fd, "g", 1) != 1)
		e = errno;
	close(ch->go_fd);
	do
		n = read(ch->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ch->err_fd);
	if (e)
		child_wait(ch);
	return n > 0 || e ? (e ? e : EIO) : 0;
}

/* Waits for the program; its exit status, or 128 + the signal that killed it. A signal a
 * process sends rasp goes on to the program; one the kernel sent the whole foreground group
 * (Ctrl-C, hangup: si_code > 0) already reached it. Either way rasp stays to save the trace. */
static int child_wait(struct child *ch)
{
	siginfo_t info;
	int status, sig;
	pid_t r;

	for (;;) {
		r = waitpid(ch->pid, &status, WNOHANG);
		if (r == ch->pid)
			break;
		if (r < 0 && errno != EINTR)
			return 127;
		sig = sigwaitinfo(&watched, &info);
		if (sig > 0 && sig != SIGCHLD && info.si_code <= 0)
			kill(ch->pid, sig);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The session could not be set up: the held program exits without running. */
static void child_abandon(struct child *ch)
{
	close(ch->go_fd);
	close(ch->err_fd);
	child_wait(ch);
}

int rasp_cli_record(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"mean", required_argument, NULL, 'm'},
	    {"seed", required_argument, NULL, 's'},
	    {"subbuf-size", required_argument, NULL, 'b'},
	    {"num-subbuf", required_argument, NULL, 'n'},
	    {"all", no_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cmd = "record", *output = NULL;
	struct rasp_session s = {.subbuf_size = 2u << 20, .num_subbuf = 8};
	char mean_env[64] = "", seed_env[64] = "";
	char *extra[8];
	size_t n_extra = 0;
	uint64_t v, discarded = 0, events = 0;
	struct child child;
	char **env = NULL;
	int c, rc, exit_code;

	optind = 1;
	opterr = 0; /* our own one-line messages below */
	while ((c = getopt_long(argc, argv, "+o:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'm':
			if (rasp_cli_parse_u64(cmd, "--mean", optarg, 1, UINT64_C(1) << 48, true,
					       &v))
				return 2;
			snprintf(mean_env, sizeof(mean_env), "RASP_SAMPLING_MEAN=%" PRIu64, v);
			break;
		case 's':
			if (rasp_cli_parse_u64(cmd, "--seed", optarg, 0, UINT64_MAX, false, &v))
				return 2;
			snprintf(seed_env, sizeof(seed_env), "RASP_SEED=%" PRIu64, v);
			break;
		case 'b':
			if (rasp_cli_parse_u64(cmd, "--subbuf-size", optarg, 4096,
					       UINT64_C(1) << 32, true, &s.subbuf_size))
				return 2;
			if (!is_pow2(s.subbuf_size)) {
				rasp_cli_error(cmd, "--subbuf-size '%s' is not a power of 2",
					       optarg);
				return 2;
			}
			break;
		case 'n':
			if (rasp_cli_parse_u64(cmd, "--num-subbuf", optarg, 2, 1024, false,
					       &s.num_subbuf))
				return 2;
			if (!is_pow2(s.num_subbuf)) {
				rasp_cli_error(cmd, "--num-subbuf '%s' is not a power of 2",
					       optarg);
				return 2;
			}
			break;
		case 'a':
			s.all_processes = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			rasp_cli_bad_option(cmd, argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		rasp_cli_error(cmd, "no PROGRAM given (usage: rasp record [options] -- PROGRAM "
				    "[ARGS...])");
		return 2;
	}
	if (find_program(argv[optind]) != 0) {
		rasp_cli_error(cmd, "PROGRAM '%s' not found or not executable", argv[optind]);
		return 127;
	}
	if (prepare_output(cmd, output, s.output, sizeof(s.output)) != 0)
		return 2;
	/* Wait for registration: the session exists, so this returns within milliseconds, and a
	 * program shorter than that still has its first events recorded. */
	if (!getenv("LTTNG_UST_REGISTER_TIMEOUT"))
		extra[n_extra++] = "LTTNG_UST_REGISTER_TIMEOUT=-1";
	extra[n_extra++] = "LTTNG_UST_ALLOW_BLOCKING=1";
	if (mean_env[0])
		extra[n_extra++] = mean_env;
	if (seed_env[0])
		extra[n_extra++] = seed_env;
	env = child_env(extra, n_extra);
	if (!env) {
		rasp_cli_error(cmd, "out of memory");
		return 2;
	}
	if (rasp_session_daemon_ensure(cmd) != 0) {
		free(env);
		return 2;
	}
	/* The program is forked first and held before exec, so that its pid can be tracked
	 * before it registers with the session daemon: only its events are recorded. */
	watch_signals();
	if (child_fork(cmd, argv + optind, env, &child) != 0) {
		unwatch_signals();
		free(env);
		return 2;
	}
	free(env);

	s.pid = s.all_processes ? 0 : child.pid;
	if (rasp_session_start(cmd, &s) != 0) {
		child_abandon(&child);
		rasp_session_destroy(&s);
		unwatch_signals();
		return 2;
	}
	rc = child_release(&child);
	if (rc != 0) {
		rasp_cli_error(cmd, "cannot run '%s': %s", argv[optind], strerror(rc));
		exit_code = 127;
	} else {
		exit_code = child_wait(&child);
	}
	unwatch_signals();

	rc = rasp_session_stop(cmd, &s, &discarded);
	rasp_session_destroy(&s);
	if (rc != 0)
		return exit_code ? exit_code : 2;
	rc = rasp_graph_count_events(cmd, s.output, &events);
	if (rc != 0 && rc != -ENOENT) /* -ENOENT: nothing was emitted, so no trace files */
		rasp_cli_error(cmd, "the trace in %s could not be read to count its events",
			       s.output);
	fprintf(stderr, "rasp record: trace in %s\n", s.output);
	fprintf(stderr, "rasp record: %" PRIu64 " events, %" PRIu64 " discarded\n", events,
		discarded);
	if (discarded)
		fprintf(
		    stderr,
		    "rasp record: warning: the tracer discarded %" PRIu64 " events, so estimates "
		    "will be too low; record again with larger buffers, e.g. --subbuf-size %" PRIu64
		    " --num-subbuf %" PRIu64 "\n",
		    discarded, s.subbuf_size * 4, s.num_subbuf < 256 ? s.num_subbuf * 2 : 256);
	if (exit_code)
		fprintf(stderr, "rasp record: %s exited with status %d\n", argv[optind], exit_code);
	return exit_code;
}
