/* rasp record: runs a program under an LTTng session that records its sampled allocations,
 * then says where the trace is and what it holds: events, samples and discarded events as the
 * report will count them (the same tally reads the trace), and whether the trace is complete.
 * The program's exit status is passed through, as perf record does. With -p PID it attaches
 * to a running process through its diagnostic socket instead (attach.c). */
#define _GNU_SOURCE
#include "cli.h"
#include "follow.h"
#include "preload.h"
#include "primer.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "child.h"
#include "rasp/rasp.h"
#include "record-args.h"

extern char **environ;

/* LTTng-UST's dlopen wrapper (lttng-ust-dl(3)), preloaded into the program with stacks. */
#define DL_WRAPPER "liblttng-ust-dl.so.1"

/* A file system with less free space than this after recording most likely filled up. */
#define NEARLY_FULL (UINT64_C(1) << 20)
/* The summary reads a trace's events (to count them, and say why a recording is empty) when its
 * streams hold at most this: reading costs about 10 us per sample with its stack, five times
 * what writing it cost the program (git log -p -n 2000: 184 million instructions against 36
 * million, 4,864 samples, 1.6 MiB), and would grow with the recording, seconds after a long
 * one. A larger trace is summed up from its packet indexes (size, events discarded, packets
 * lost, streams cut short) and left to rasp report. */
#define SUMMARY_READ_MAX (UINT64_C(512) << 10)

/* PROGRAM as execvpe would find it; 0 if found and executable. */
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

/* The output directory, absolute. Made here when it does not exist (0770, as LTTng makes
 * its directories), so that no other user's directory can take its place before the session
 * daemon writes into it; an existing one must be an empty directory of this user: another
 * user's (one pre-created in a shared directory such as /tmp) could be read or its trace
 * replaced by its owner. A missing parent is left to LTTng, which makes the whole path. */
static int prepare_output(const char *cmd, const char *requested, char *out, size_t len)
{
	char name[64], cwd[PATH_MAX];
	struct stat st;
	int rc;

	if (!requested) {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(name, sizeof(name), "rasp-%Y%m%d-%H%M%S", &tm);
		requested = name;
	}
	if (requested[0] == '/') {
		if (snprintf(out, len, "%s", requested) >= (int)len)
			goto too_long;
	} else {
		if (!getcwd(cwd, sizeof(cwd))) {
			rc = -errno;
			rasp_cli_error(cmd, "cannot get the current directory: %s", strerror(-rc));
			return rc;
		}
		if (snprintf(out, len, "%s/%s", cwd, requested) >= (int)len)
			goto too_long;
	}
	if (mkdir(out, 0770) == 0 || errno != EEXIST)
		return 0;
	if (stat(out, &st) == 0) {
		struct dirent *e;
		DIR *d;
		int entries = 0;

		if (!S_ISDIR(st.st_mode)) {
			rasp_cli_error(cmd, "output '%s' exists and is not a directory", out);
			return -EEXIST;
		}
		if (st.st_uid != geteuid()) {
			rasp_cli_error(cmd,
				       "output directory '%s' belongs to uid %lu, not to you (uid "
				       "%lu): its owner could read or replace the trace; choose "
				       "another with -o",
				       out, (unsigned long)st.st_uid, (unsigned long)geteuid());
			return -EPERM;
		}
		d = opendir(out);
		if (!d) {
			rasp_cli_error(cmd, "cannot read output directory '%s': %s", out,
				       strerror(errno));
			return -EACCES;
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
		return 0;
	}
	rc = -errno;
	rasp_cli_error(cmd, "output '%s' exists but cannot be used: %s", out, strerror(-rc));
	return rc;
too_long:
	rasp_cli_error(cmd, "output path '%s' is too long", requested);
	return -ENAMETOOLONG;
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

/* The primer's environment (cli/primer.c): the program's settings with rasp's preloads only
 * (not the user's own, which are the program's business: an interposer counting calls, another
 * profiler), without the follow socket (it is not the program's child), with sampling off and
 * LTTng-UST's state dump reduced to its markers. */
static char **primer_env(char **extra, size_t n_extra, const char *keep_out, bool stacks,
			 const char *malloc_lib, char *preload, size_t preload_len)
{
	static char *const quiet[] = {"RASP_RECORD_FOLLOW=", "RASP_SAMPLING=off",
				      "LTTNG_UST_WITHOUT_BADDR_STATEDUMP=1",
				      "LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP=1"};
	char *pe[16];
	size_t np = 0;

	if (snprintf(preload, preload_len, "LD_PRELOAD=%s%s%s", stacks ? DL_WRAPPER : "",
		     stacks ? ":" : "", malloc_lib) >= (int)preload_len)
		return NULL;
	for (size_t k = 0; k < n_extra && np < sizeof(pe) / sizeof(pe[0]) - 5; k++)
		if (extra[k] != keep_out && strncmp(extra[k], "LD_PRELOAD=", 11) != 0)
			pe[np++] = extra[k];
	pe[np++] = preload;
	for (size_t k = 0; k < sizeof(quiet) / sizeof(quiet[0]); k++)
		pe[np++] = quiet[k];
	return child_env(pe, np); /* its entries point into extra, quiet and preload */
}

/* What the trace holds, counted by the report's own reader when it is small, from its packet
 * indexes when not; whether it is complete. Returns 0 when it is, 1 when it is incomplete or
 * unreadable. */
static int summarize(const char *cmd, const struct rasp_session *s, const char *program,
		     bool is_static)
{
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, RASP_DEFAULT_SAMPLING_MEAN);
	char *ops[] = {(char *)s->output};
	struct rasp_inputs in = {0};
	struct statvfs fs;
	uint64_t events = 0, discarded = 0, packets_lost = 0, stream_bytes = 0;
	bool incomplete = false, empty = false, read = false, unknown, lost;
	int rc = 0;

	if (!t) {
		rasp_cli_error(cmd, "out of memory");
		return 1;
	}
	fprintf(stderr, "rasp record: trace in %s\n", s->output);
	/* strict off: a malformed event is counted as such, not a reason to stop counting. No
	 * trace at all: nothing was emitted, so the consumer daemon wrote no file. The packet
	 * indexes first (stream cut short, events discarded, packets lost); the events
	 * themselves only in a small trace (SUMMARY_READ_MAX), or where an index is missing. */
	empty = !rasp_inputs_any(s->output);
	if (!empty) {
		rc = rasp_inputs_collect(cmd, ops, 1, &in, t);
		if (!rc && (in.stream_bytes <= SUMMARY_READ_MAX || in.unindexed)) {
			rc = rasp_graph_tally(cmd, &in, false, t);
			read = true;
		}
		stream_bytes = in.stream_bytes;
		packets_lost = in.packets_lost;
		discarded = in.events_discarded;
		rasp_inputs_free(&in);
	}
	if (rc) {
		rasp_cli_error(cmd, "the trace in %s cannot be read: it is incomplete", s->output);
		incomplete = true;
	}
	if (read || empty || rc) {
		discarded = t->discarded_events;
		unknown = t->discarded_events_unknown;
		lost = rasp_tally_lost_data(t);
		events = t->samples + t->configured + t->ticks_total + t->other_events + t->skipped;
		fprintf(stderr,
			"rasp record: %" PRIu64 " events, %" PRIu64 "%s discarded (%" PRIu64
			" AllocationSampled samples)\n",
			events, discarded, unknown ? "+" : "", t->samples);
	} else {
		unknown = false;
		lost = discarded > 0;
		fprintf(stderr,
			"rasp record: %.1f MiB of event streams, %" PRIu64
			" discarded (as its packets say; rasp report reads the events)\n",
			(double)stream_bytes / (1 << 20), discarded);
		if (packets_lost)
			fprintf(stderr,
				"rasp record: warning: %" PRIu64 " packets of events were lost "
				"(their sequence numbers jump), so estimates will be too low\n",
				packets_lost);
	}
	if (lost)
		fprintf(stderr,
			"rasp record: warning: the tracer discarded %" PRIu64 "%s events, so "
			"estimates will be too low; record again with larger buffers, e.g. "
			"--subbuf-size %" PRIu64 " --num-subbuf %" PRIu64 "\n",
			discarded, unknown ? "+" : "",
			s->subbuf_size * 4 > (UINT64_C(256) << 20) ? s->subbuf_size
								   : s->subbuf_size * 4,
			s->num_subbuf < 256 ? s->num_subbuf * 2 : 256);
	for (size_t i = 0; i < t->nwarnings; i++) {
		fprintf(stderr, "rasp record: warning: %s\n", t->warnings[i]);
		incomplete = true;
	}
	if (statvfs(s->output, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < NEARLY_FULL) {
		fprintf(stderr,
			"rasp record: warning: the file system holding %s is full (%" PRIu64
			" KiB free): the trace is most likely incomplete\n",
			s->output, (uint64_t)fs.f_bavail * fs.f_frsize >> 10);
		incomplete = true;
	}
	/* The state dump of loaded objects (stacks on) is there whatever the program does: only
	 * the runtime's own events say it allocates through librasp or .NET. */
	if (!read && !empty)
		; /* a large trace: it holds events, which rasp report counts */
	else if (is_static &&
		 (empty || (!incomplete && t->samples + t->configured + t->ticks_total == 0)))
		fprintf(stderr,
			"rasp record: %s emitted no allocation events: it is statically linked "
			"(above)\n",
			program);
	else if (empty || (!incomplete && t->samples + t->configured + t->ticks_total == 0))
		fprintf(
		    stderr,
		    "rasp record: %s emitted no allocation events: does it allocate through "
		    "librasp "
		    "(rasp_alloc), or is it a .NET program started with DOTNET_EnableEventLog=1 "
		    "(docs/usage.md)?\n",
		    program);
	else if (!incomplete && t->samples == 0)
		fprintf(
		    stderr,
		    "rasp record: no AllocationSampled samples: the program allocated less than "
		    "one sampling mean, or sampling was off (RASP_SAMPLING=off)\n");
	if (incomplete)
		fprintf(stderr,
			"rasp record: the trace in %s is INCOMPLETE: estimates from it "
			"are too low\n",
			s->output);
	rasp_tally_destroy(t);
	return incomplete ? 1 : 0;
}

int rasp_cli_record(int argc, char **argv)
{
	const char *cmd = "record";
	struct rasp_record_args a;
	char *extra[8], preload[2 * PATH_MAX + 8192], asan_env[4096], malloc_lib[PATH_MAX];
	char follow_env[256], primer_lib[PATH_MAX], dl_lib[PATH_MAX];
	struct rasp_follow *follow = NULL;
	struct rasp_primer primer = {0};
	size_t n_extra = 0;
	struct rasp_child child;
	char **env = NULL;
	int first, rc, exit_code, incomplete;
	bool is_static = false;

	rc = rasp_cli_record_parse(argc, argv, &a, &first);
	if (rc != RASP_CLI_ARGS_OK) {
		if (rc == RASP_CLI_ARGS_HELP)
			rasp_cli_record_usage();
		return rc == RASP_CLI_ARGS_HELP ? 0 : 2;
	}
	if (a.pid) {
		struct rasp_attach at = {.cmd = cmd,
					 .pid = (pid_t)a.pid,
					 .duration = a.duration,
					 .output = a.output,
					 .report = rasp_cli_report_file};

		return rasp_cli_attach(&at);
	}
	if (find_program(argv[first]) != 0) {
		rasp_cli_error(cmd, "PROGRAM '%s' not found or not executable", argv[first]);
		return 127;
	}
	if (prepare_output(cmd, a.output, a.s.output, sizeof(a.s.output)) != 0)
		return 2;
	a.s.uid = getuid();
	{
		long cpus = sysconf(_SC_NPROCESSORS_CONF);
		uint64_t per_cpu = a.s.subbuf_size * a.s.num_subbuf;

		cpus = cpus < 1 ? 1 : cpus;
		fprintf(
		    stderr,
		    "rasp record: buffers of %" PRIu64 " KiB x %" PRIu64 " per CPU on %ld CPUs, "
		    "%" PRIu64 " KiB of shared memory the program maps (--subbuf-size, "
		    "--num-subbuf)\n",
		    a.s.subbuf_size >> 10, a.s.num_subbuf, cpus, per_cpu * (uint64_t)cpus >> 10);
	}
	if (a.s.all_processes)
		fprintf(stderr, "rasp record: recording every process of %s while %s runs\n",
			a.s.all_users ? "every user" : "your user (uid)", argv[first]);
	/* Wait for registration: the session exists, so this returns within milliseconds, and a
	 * program shorter than that still has its first events recorded. */
	if (!getenv("LTTNG_UST_REGISTER_TIMEOUT"))
		extra[n_extra++] = "LTTNG_UST_REGISTER_TIMEOUT=-1";
	if (a.mean_env[0])
		extra[n_extra++] = a.mean_env;
	if (a.seed_env[0])
		extra[n_extra++] = a.seed_env;
	/* A program without librasp gets rasp's heap as its malloc, after the user's own
	 * preloads (cli/preload.c). Stacks name their functions through the objects loaded:
	 * LTTng-UST's state dump gives those loaded at start, its dlopen wrapper those loaded
	 * later, loaded by librasp-dl.so at the program's first load of its own
	 * (malloc/dl-wrapper.c; preloaded itself where there is no librasp-dl.so). */
	malloc_lib[0] = 0;
	if (rasp_cli_dl_library(dl_lib, sizeof(dl_lib)) != 0)
		snprintf(dl_lib, sizeof(dl_lib), "%s", DL_WRAPPER);
	if (!a.no_malloc &&
	    rasp_cli_malloc_preload(cmd, argv[first], malloc_lib, sizeof(malloc_lib)) == 1)
		fprintf(stderr,
			"rasp record: %s does not link librasp: preloading %s as its malloc\n",
			argv[first], malloc_lib);
	/* Said before it runs: a long program's recording would otherwise end empty unexplained. */
	is_static = malloc_lib[0] && rasp_cli_program_is_static(argv[first]);
	if (is_static)
		fprintf(
		    stderr,
		    "rasp record: warning: %s is statically linked: no preload reaches it, so "
		    "its allocations cannot be recorded (link it dynamically, or with librasp)\n",
		    argv[first]);
	if (a.s.stacks || malloc_lib[0]) {
		const char *pre = getenv("LD_PRELOAD");
		int w = snprintf(
		    preload, sizeof(preload), "LD_PRELOAD=%s%s%s%s%s", a.s.stacks ? dl_lib : "",
		    a.s.stacks && pre && *pre ? ":" : "", pre ? pre : "",
		    malloc_lib[0] && (a.s.stacks || (pre && *pre)) ? ":" : "", malloc_lib);

		if (w < 0 || w >= (int)sizeof(preload)) {
			rasp_cli_error(cmd, "LD_PRELOAD too long (%d bytes)", w);
			return 2;
		}
		extra[n_extra++] = preload;
	}
	if (a.s.stacks) {
		const char *asan = getenv("ASAN_OPTIONS");

		/* A program built with AddressSanitizer refuses to start when a preloaded library
		 * comes before its runtime; the wrapper replaces only dlopen and dlclose, which
		 * ASan does not, so its order does not matter. No effect on other programs. */
		if ((!asan || !strstr(asan, "verify_asan_link_order")) &&
		    snprintf(asan_env, sizeof(asan_env),
			     "ASAN_OPTIONS=%s%sverify_asan_link_order=0", asan ? asan : "",
			     asan && *asan ? ":" : "") < (int)sizeof(asan_env))
			extra[n_extra++] = asan_env;
	}
	/* Its children too, one process each, as perf record does (-a records them anyway). */
	if (malloc_lib[0] && !a.s.all_processes) {
		follow = rasp_follow_open(cmd, follow_env, sizeof(follow_env));
		if (follow)
			extra[n_extra++] = follow_env;
	}
	env = child_env(extra, n_extra);
	if (!env) {
		rasp_cli_error(cmd, "out of memory");
		rasp_follow_close(follow);
		return 2;
	}
	if (rasp_session_daemon_ensure(cmd) != 0) {
		free(env);
		rasp_follow_close(follow);
		return 2;
	}
	rasp_session_prepare(cmd, &a.s);
	/* The guard first: it must hold none of the program's pipes. */
	rasp_session_guard(cmd, &a.s);
	/* The program is forked, then held before exec, so that its pid is tracked before it
	 * registers with the session daemon: only its events are recorded. */
	rasp_child_watch_signals();
	if (rasp_child_fork(cmd, argv + first, env, &child) != 0) {
		rasp_child_unwatch_signals();
		rasp_session_destroy(&a.s);
		free(env);
		rasp_follow_close(follow);
		return 2;
	}
	free(env);

	a.s.pid = child.pid;
	if (rasp_session_start(cmd, &a.s) != 0) {
		rasp_child_abandon(&child);
		rasp_session_destroy(&a.s);
		rasp_child_unwatch_signals();
		rasp_follow_close(follow);
		return 2;
	}
	/* The primer (cli/primer.c), held until the program has registered: with librasp-malloc,
	 * whether the program links librasp or not, as both load the same provider. */
	if (malloc_lib[0] || rasp_cli_malloc_library(primer_lib, sizeof(primer_lib)) == 0) {
		char primer_preload[PATH_MAX + 64];
		char **penv = primer_env(extra, n_extra, follow_env, a.s.stacks,
					 malloc_lib[0] ? malloc_lib : primer_lib, primer_preload,
					 sizeof(primer_preload));

		if (penv)
			(void)rasp_primer_start(cmd, &a.s, penv, &primer);
		free(penv);
	}
	if (follow)
		rasp_follow_when_announced(follow, child.pid, rasp_primer_release, &primer);
	if (follow && rasp_follow_start(follow, a.s.name) != 0) {
		rasp_cli_error(cmd, "cannot follow the program's children: only its own process "
				    "is recorded");
		rasp_follow_close(follow);
		follow = NULL;
	}
	rc = rasp_child_release(&child);
	if (!follow && rc == 0)
		rasp_primer_release(&primer);
	if (rc != 0) {
		rasp_cli_error(cmd, "cannot run '%s': %s", argv[first], strerror(rc));
		exit_code = 127;
	} else {
		/* The summary's plugins, loaded while the program runs (3 ms, another core). */
		rasp_cli_graph_warm();
		exit_code = rasp_child_wait(&child);
	}
	/* The follow thread first: it may be releasing the primer. */
	rasp_follow_close(follow);
	rasp_primer_end(&primer);
	rasp_child_unwatch_signals();

	rc = rasp_session_stop(cmd, &a.s);
	if (rc != 0) {
		rasp_session_destroy(&a.s);
		return exit_code ? exit_code : 1;
	}
	incomplete = summarize(cmd, &a.s, argv[first], is_static);
	/* After the summary: its read of the trace never races the daemon's teardown. */
	rasp_session_destroy(&a.s);
	if (exit_code)
		fprintf(stderr, "rasp record: %s exited with status %d\n", argv[first], exit_code);
	return exit_code ? exit_code : incomplete;
}
