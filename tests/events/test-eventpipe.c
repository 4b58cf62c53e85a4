/* The runtime's EventPipe session (events/eventpipe.c), end to end: ep-prog is started with
 * .NET's variables and its .nettrace file is read back with rasp's NetTrace reader (checked
 * itself against TraceEvent by tests/dotnet). Every sample the runtime counted is in the file,
 * with its thread's SamplingConfigured before it and its free after it; drops show as losses;
 * the heap's destruction flushes; a forked child writes nothing into its parent's file; bad
 * variables and unwritable paths give one message and never stop the program. Programs run under
 * the build's sanitizers, and their exit status is checked. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../support/live-samples.h"
#include "read/nettrace-read.h"
#include "rasp-event-desc.h"

extern char **environ;

static char prog[PATH_MAX];
static char dir[PATH_MAX];

struct run {
	int status;
	char out[4096], err[8192];
	long pid;
	uint64_t samples, starts;
};

/* RLIMIT_FSIZE for the next run (0: none). */
static rlim_t fsize_limit;

/* Reads fd to its end into buf (NUL-terminated, cut at cap). */
static void slurp(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while ((r = read(fd, buf + n, cap - 1 - n)) > 0 && n + (size_t)r < cap - 1)
		n += (size_t)r;
	if (r > 0)
		n += (size_t)r;
	buf[n < cap ? n : cap - 1] = '\0';
}

/* Runs ep-prog in dir with the environment minus any DOTNET_/COMPlus_/RASP_ variable, plus
 * RASP_LTTNG=0 and env (NULL-terminated "NAME=VALUE" list). Without the LTTng provider, an
 * LTTng session another test runs at the same time (ctest -j) cannot turn sampling on in the
 * program: under ctest -j2, with plugin-live's session listening to every application,
 * problems_are_reported_once counted 3 samples with no EventPipe session and
 * drops_are_losses 25 events its file did not account for. */
static void run(struct run *r, const char *const *env, const char *threads, const char *rounds,
		const char *mode)
{
	char *envp[256];
	size_t n = 0;
	int out[2], err[2];
	pid_t pid;
	const char *p;

	for (char **e = environ; *e && n < 200; e++)
		if (strncmp(*e, "DOTNET_", 7) && strncmp(*e, "COMPlus_", 8) &&
		    strncmp(*e, "RASP_", 5))
			envp[n++] = *e;
	envp[n++] = "RASP_LTTNG=0";
	for (; env && *env && n < 250; env++)
		envp[n++] = (char *)*env;
	envp[n] = NULL;
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[] = {prog, threads, rounds, mode, NULL};

		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		if (chdir(dir) != 0)
			_exit(127);
		if (fsize_limit &&
		    setrlimit(RLIMIT_FSIZE, &(struct rlimit){fsize_limit, fsize_limit}) != 0)
			_exit(127);
		execve(prog, (char **)argv, envp);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	slurp(out[0], r->out, sizeof(r->out));
	slurp(err[0], r->err, sizeof(r->err));
	close(out[0]);
	close(err[0]);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	r->pid = -1;
	r->samples = 0;
	p = strstr(r->out, "\nsamples=");
	p = p ? p + 1 : (strncmp(r->out, "samples=", 8) == 0 ? r->out : NULL);
	if (p)
		sscanf(p, "samples=%" SCNu64 " starts=%" SCNu64 " pid=%ld", &r->samples, &r->starts,
		       &r->pid);
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0 || r->pid < 0)
		fail_msg("ep-prog failed (status 0x%x)\nstdout: %s\nstderr: %s", r->status, r->out,
			 r->err);
}

struct seen {
	uint64_t objects; /* ObjectLoaded: the loaded objects of a session with stacks */
	bool complete;
	int64_t pid;
	uint64_t sampled, configured, stopped, other, lost;
	uint64_t bad_kind, bad_offset, bad_name, bad_mean, before_config, foreign_pid;
	int64_t last_ts;
	uint64_t out_of_order;
	uint64_t configured_tids[64];
	size_t nconfigured;
	/* Frees and heap destructions paired with the samples (live-samples.h), and the samples
	 * left live at the end. */
	struct live_samples pairs;
	uint64_t live_at_end;
};

static bool tid_configured(const struct seen *s, uint64_t tid)
{
	for (size_t i = 0; i < s->nconfigured; i++)
		if (s->configured_tids[i] == tid)
			return true;
	return false;
}

/* Reads a file with rasp's reader; mean: the SamplingConfigured mean expected (0: any). */
static void read_trace(const char *path, uint64_t mean, struct seen *s)
{
	char err[1024], strs[4096];
	struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
	struct rasp_nt_item it;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!r)
		fail_msg("%s", err);
	assert_int_equal(live_samples_init(&s->pairs), 0);
	s->pid = rasp_nt_info(r)->pid;
	s->last_ts = INT64_MIN;
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_event_desc *d;
		union rasp_nt_value v[16];

		if (it.kind == RASP_NT_ITEM_LOST) {
			s->lost += it.lost;
			continue;
		}
		d = it.event.meta->desc;
		if (it.event.timestamp < s->last_ts)
			s->out_of_order++;
		s->last_ts = it.event.timestamp;
		if (it.event.pid != s->pid)
			s->foreign_pid++;
		if (!d) {
			s->other++;
			continue;
		}
		assert_int_equal(rasp_nt_decode(d, it.event.payload, it.event.payload_len,
						rasp_nt_info(r)->pointer_size, v, strs,
						sizeof(strs)),
				 0);
		if (d == &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED]) {
			const char *name = v[3].s;
			uint64_t kind = v[0].u, size = v[5].u;

			s->sampled++;
			if (strcmp(name, "Ep.Small") && strcmp(name, "Ep.Large") &&
			    strcmp(name, "Ep.Pinned"))
				s->bad_name++;
			if ((kind == 1) != (strcmp(name, "Ep.Large") == 0) ||
			    (kind == 2) != (strcmp(name, "Ep.Pinned") == 0))
				s->bad_kind++;
			if (v[6].u >= size)
				s->bad_offset++;
			if (!tid_configured(s, it.event.thread_id))
				s->before_config++;
			live_samples_sampled(&s->pairs, v[1].u, v[4].u, size);
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED]) {
			live_samples_freed(&s->pairs, v[0].u, v[1].u, v[2].u);
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_HEAPDESTROYED]) {
			live_samples_destroyed(&s->pairs, v[0].u);
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED]) {
			s->configured++;
			if (mean && v[1].u != mean)
				s->bad_mean++;
			if (!tid_configured(s, it.event.thread_id) && s->nconfigured < 64)
				s->configured_tids[s->nconfigured++] = it.event.thread_id;
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLINGSTOPPED]) {
			s->stopped++;
		} else if (d == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED]) {
			s->objects++; /* test-eventpipe-objects checks them */
		} else {
			s->other++;
		}
	}
	if (rc < 0)
		fail_msg("%s", rasp_nt_error(r));
	s->complete = rasp_nt_complete(r);
	rasp_nt_close(r);
	s->live_at_end = live_samples_live(&s->pairs);
	live_samples_fini(&s->pairs);
}

static char *trace_path(char *buf, size_t cap, const char *name)
{
	size_t n = strlen(dir);

	assert_true(n + 1 + strlen(name) < cap);
	memcpy(buf, dir, n);
	buf[n] = '/';
	strcpy(buf + n + 1, name);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/ep-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#define SAMPLED_ONLY "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4"

/* Four threads; sampling on because the session wants AllocationSampled (RASP_SAMPLING is
 * left at auto): every sample counted is in the file, after its thread's announcement. */
static void every_sample_is_written(void **state)
{
	const char *env[] = {"DOTNET_EnableEventPipe=1",
			     "DOTNET_EventPipeOutputPath=t-{pid}-{pid}.nettrace", SAMPLED_ONLY,
			     "RASP_SAMPLING_MEAN=4096", NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX], name[64];

	(void)state;
	run(&r, env, "4", "3000", "");
	snprintf(name, sizeof(name), "t-%ld-%ld.nettrace", r.pid, r.pid);
	read_trace(trace_path(path, sizeof(path), name), 4096, &s);
	assert_string_equal(r.err, "");
	assert_true(s.complete);
	assert_int_equal(s.pid, r.pid);
	assert_true(r.samples > 1000);
	assert_int_equal(s.sampled, r.samples);
	assert_int_equal(s.lost, 0);
	assert_true(r.starts >= 4);
	assert_int_equal(s.configured, r.starts); /* each thread announces its own sampling */
	assert_int_equal(s.bad_mean, 0);
	assert_int_equal(s.before_config, 0);
	assert_int_equal(s.stopped, 1); /* the heap's destruction */
	assert_int_equal(s.bad_name, 0);
	assert_int_equal(s.bad_kind, 0);
	assert_int_equal(s.bad_offset, 0);
	assert_int_equal(s.other, 0);
	assert_int_equal(s.out_of_order, 0);
	assert_int_equal(s.foreign_pid, 0);
	/* ep-prog frees every object (four threads, each its own): every sample's free is in the
	 * file once, after it, with its size, before the address was sampled again. */
	assert_int_equal(s.pairs.freed, s.sampled);
	assert_int_equal(s.pairs.free_unpaired, 0);
	assert_int_equal(s.pairs.free_bad_size, 0);
	assert_int_equal(s.pairs.sample_over_live, 0);
	assert_int_equal(s.pairs.ended_by_destroy, 0);
	assert_int_equal(s.live_at_end, 0);
	assert_int_equal(s.pairs.destroyed, 1);
}

/* A session without the AllocationSampled keyword leaves sampling off (auto) and writes a
 * valid, empty trace; rasp's events follow AllocationSampled unless listed themselves. */
static void the_session_decides_what_is_sampled(void **state)
{
	const char *without[] = {"DOTNET_EnableEventPipe=1",
				 "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x1:5,"
				 "Other-Provider:ff:5:key=value",
				 NULL};
	const char *only_rasp[] = {"DOTNET_EnableEventPipe=1", SAMPLED_ONLY ",Rasp-Runtime:0x0:4",
				   "RASP_SAMPLING_MEAN=65536", NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX];

	(void)state;
	run(&r, without, "1", "200", "");
	assert_string_equal(r.err, "");
	assert_int_equal(r.samples, 0);
	read_trace(trace_path(path, sizeof(path), "trace.nettrace"), 0, &s); /* .NET's default */
	assert_true(s.complete);
	assert_int_equal(s.sampled + s.configured + s.stopped + s.pairs.freed + s.pairs.destroyed +
			     s.other + s.lost,
			 0);

	/* Rasp-Runtime listed with keywords 0: its events (keyword 0x1) are off. */
	run(&r, only_rasp, "1", "2000", "");
	read_trace(path, 0, &s);
	assert_true(r.samples > 0);
	assert_int_equal(s.sampled, r.samples);
	assert_int_equal(s.configured + s.stopped + s.pairs.freed + s.pairs.destroyed, 0);
}

/* DOTNET_ wins over COMPlus_; COMPlus_ alone works. */
static void legacy_prefix(void **state)
{
	const char *legacy[] = {"COMPlus_EnableEventPipe=1",
				"COMPlus_EventPipeOutputPath=legacy.nettrace", SAMPLED_ONLY, NULL};
	const char *both[] = {"DOTNET_EnableEventPipe=0", "COMPlus_EnableEventPipe=1",
			      "DOTNET_EventPipeOutputPath=both.nettrace", NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX];
	struct stat st;

	(void)state;
	run(&r, legacy, "1", "2000", "");
	read_trace(trace_path(path, sizeof(path), "legacy.nettrace"), 0, &s);
	assert_int_equal(s.sampled, r.samples);
	assert_true(r.samples > 0);
	run(&r, both, "1", "10", "");
	assert_int_equal(stat(trace_path(path, sizeof(path), "both.nettrace"), &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* A value that is not a number, a file that cannot be created, a device that is full: one
 * message naming the variable or the file, and the program runs to its end. */
static void problems_are_reported_once(void **state)
{
	const char *bad[] = {"DOTNET_EnableEventPipe=yes",
			     "DOTNET_EventPipeOutputPath=bad.nettrace", NULL};
	const char *nodir[] = {"DOTNET_EnableEventPipe=1",
			       "DOTNET_EventPipeOutputPath=no/such/dir/x.nettrace", SAMPLED_ONLY,
			       NULL};
	const char *full[] = {"DOTNET_EnableEventPipe=1", "DOTNET_EventPipeOutputPath=/dev/full",
			      SAMPLED_ONLY, NULL};
	const char *fsize[] = {"DOTNET_EnableEventPipe=1",
			       "DOTNET_EventPipeOutputPath=limited.nettrace", SAMPLED_ONLY,
			       "RASP_SAMPLING_MEAN=1024", NULL};
	const char *badcfg[] = {
	    "DOTNET_EnableEventPipe=1", "DOTNET_EventPipeOutputPath=cfg.nettrace",
	    "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:zz:4", NULL};
	struct run r;
	struct stat st;
	char path[PATH_MAX];
	const char *first;

	(void)state;
	run(&r, bad, "1", "10", "");
	assert_non_null(strstr(r.err, "DOTNET_EnableEventPipe='yes' is not a hexadecimal number"));
	assert_int_equal(stat(trace_path(path, sizeof(path), "bad.nettrace"), &st), -1);

	run(&r, nodir, "1", "10", "");
	assert_non_null(strstr(r.err, "cannot start the session writing 'no/such/dir/x.nettrace' "
				      "(No such file or directory)"));

	run(&r, full, "2", "2000", "");
	assert_int_equal(r.samples, 0); /* no session: nothing listens, sampling stays off */
	first = strstr(r.err, "rasp: EventPipe: cannot start the session writing '/dev/full' "
			      "(No space left on device)");
	assert_non_null(first);
	assert_null(strstr(first + 1, "rasp:")); /* once */

	/* A file size limit reached mid-run: an error, not SIGXFSZ; reported once. */
	fsize_limit = 8192;
	run(&r, fsize, "2", "4000", "");
	fsize_limit = 0;
	assert_true(r.samples > 0);
	first =
	    strstr(r.err, "rasp: EventPipe: writing 'limited.nettrace' failed (File too large)");
	if (!first)
		fail_msg("stderr: %s", r.err);
	assert_null(strstr(first + 1, "rasp:"));
	assert_int_equal(stat(trace_path(path, sizeof(path), "limited.nettrace"), &st), 0);
	assert_true(st.st_size <= 8192);

	run(&r, badcfg, "1", "10", "");
	assert_non_null(strstr(r.err, "keywords 'zz' are not a hexadecimal number"));
	assert_int_equal(r.samples, 0);
}

/* Eight threads sampling every byte into a 1 MB pool: buffers run out, events are dropped and
 * the reader sees exactly as many lost as the sequence numbers skipped. */
static void drops_are_losses(void **state)
{
	const char *env[] = {
	    "DOTNET_EnableEventPipe=1",	    "DOTNET_EventPipeOutputPath=drops.nettrace",
	    "DOTNET_EventPipeCircularMB=1", SAMPLED_ONLY,
	    "RASP_SAMPLING_MEAN=1",	    NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX];

	(void)state;
	run(&r, env, "8", "100000", "small");
	read_trace(trace_path(path, sizeof(path), "drops.nettrace"), 1, &s);
	assert_true(s.complete);
	assert_true(s.lost > 0);
	assert_true(s.sampled < r.samples);
	/* Every event the runtime emitted is in the file or counted lost, to the last one:
	 * samples and their frees (every sample was emitted, lost or not, and so marked), one
	 * announcement per start, the heap's SamplingStopped and HeapDestroyed. */
	assert_int_equal(s.sampled + s.pairs.freed + s.configured + s.stopped + s.pairs.destroyed +
			     s.lost,
			 2 * r.samples + r.starts + 2);
	assert_int_equal(s.out_of_order, 0);
	assert_int_equal(s.bad_name + s.bad_kind + s.bad_offset + s.bad_mean, 0);
}

/* The heap's destruction writes what was buffered: a program that then dies without its
 * library destructor leaves a file cut short (no end marker) holding every sample. */
static void heap_destruction_flushes(void **state)
{
	const char *env[] = {"DOTNET_EnableEventPipe=1",
			     "DOTNET_EventPipeOutputPath=quick.nettrace", SAMPLED_ONLY,
			     "RASP_SAMPLING_MEAN=8192", NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX];

	(void)state;
	run(&r, env, "3", "2000", "quick-exit");
	read_trace(trace_path(path, sizeof(path), "quick.nettrace"), 8192, &s);
	assert_false(s.complete);
	assert_true(r.samples > 0);
	assert_int_equal(s.sampled, r.samples);
	assert_int_equal(s.stopped, 1);
}

/* A forked child has no session: the parent's file holds the parent's events only. */
static void a_child_writes_nothing(void **state)
{
	const char *env[] = {"DOTNET_EnableEventPipe=1",
			     "DOTNET_EventPipeOutputPath=fork-{pid}.nettrace", SAMPLED_ONLY, NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX], name[64];
	long child = -1;
	const char *c;
	struct stat st;

	(void)state;
	run(&r, env, "2", "2000", "fork");
	c = strstr(r.out, "child samples=");
	assert_non_null(c);
	assert_int_equal(sscanf(c, "child samples=%*u pid=%ld", &child), 1);
	snprintf(name, sizeof(name), "fork-%ld.nettrace", child);
	assert_int_equal(stat(trace_path(path, sizeof(path), name), &st), -1);
	snprintf(name, sizeof(name), "fork-%ld.nettrace", r.pid);
	read_trace(trace_path(path, sizeof(path), name), 0, &s);
	assert_true(s.complete);
	assert_int_equal(s.sampled, r.samples);
	assert_int_equal(s.foreign_pid, 0);
}

/* Objects still live when their heap is destroyed: their samples have no free, and the one
 * HeapDestroyed ends them all; the others' frees pair as always. Lifetime events alone
 * (Rasp-Runtime's lifetime keyword, no announcements) follow the session's choice. */
static void a_destroyed_heap_ends_its_samples(void **state)
{
	const char *env[] = {"DOTNET_EnableEventPipe=1", "DOTNET_EventPipeOutputPath=leak.nettrace",
			     SAMPLED_ONLY ",Rasp-Runtime:0x2:4", "RASP_SAMPLING_MEAN=4096", NULL};
	struct run r;
	struct seen s;
	char path[PATH_MAX];

	(void)state;
	run(&r, env, "3", "3000", "leak");
	read_trace(trace_path(path, sizeof(path), "leak.nettrace"), 0, &s);
	printf("%llu samples: %llu freed, %llu live at the heap's destruction\n",
	       (unsigned long long)s.sampled, (unsigned long long)s.pairs.freed,
	       (unsigned long long)s.pairs.ended_by_destroy);
	assert_true(s.complete);
	assert_int_equal(s.sampled, r.samples);
	assert_int_equal(s.configured + s.stopped, 0); /* their keyword is off */
	assert_int_equal(s.pairs.destroyed, 1);
	assert_true(s.pairs.ended_by_destroy > 0);
	assert_int_equal(s.pairs.freed + s.pairs.ended_by_destroy, s.sampled);
	assert_int_equal(s.pairs.free_unpaired + s.pairs.free_bad_size + s.pairs.sample_over_live,
			 0);
	assert_int_equal(s.live_at_end, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(every_sample_is_written, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_session_decides_what_is_sampled, setup, teardown),
	    cmocka_unit_test_setup_teardown(legacy_prefix, setup, teardown),
	    cmocka_unit_test_setup_teardown(problems_are_reported_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(drops_are_losses, setup, teardown),
	    cmocka_unit_test_setup_teardown(heap_destruction_flushes, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_child_writes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_destroyed_heap_ends_its_samples, setup, teardown),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test-eventpipe PATH-OF-ep-prog\n");
		return 2;
	}
	if (!realpath(argv[1], prog)) {
		perror(argv[1]);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
