/* rasp record's command line (record-args.h): its flags and help, the checks between them,
 * and the LTTng buffers' default sizes, which follow the CPU count and the sampling mean. Apart
 * from running it (cmd-record.c), so that tests and the fuzzer drive the parsing alone. */
#define _GNU_SOURCE
#include "record-args.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rasp/rasp.h"

/* Per-CPU buffers below this lose events under a busy program's load: warned about when the
 * user chose them. */
#define SMALL_BUFFERS (UINT64_C(128) << 10)
/* The default buffers. LTTng's per-CPU rings are shared memory the recorded process maps and,
 * as each ring wraps, touches in full: they count in its RSS (2 MiB x 8 per CPU put 36 MiB
 * into the demo's on 2 CPUs). At the default sampling mean all CPUs' rings share this much,
 * each CPU's a power of 2 between MIN_PER_CPU and MAX_PER_CPU in DEFAULT_NUM_SUBBUF
 * sub-buffers; a smaller mean means as many times more events, and buffers (a larger one,
 * the default's). On 2 CPUs: 256 KiB
 * x 4 per CPU, 2.6 MiB of the demo's RSS, nothing lost (docs/usage.md). Past 24 CPUs the
 * floor makes it more than 3 MiB in all. */
#define BUFFER_BUDGET	   (UINT64_C(3) << 20)
#define MIN_PER_CPU	   (UINT64_C(128) << 10)
#define MAX_PER_CPU	   (UINT64_C(64) << 20)
#define DEFAULT_NUM_SUBBUF 4

enum {
	F_OUTPUT,
	F_PID,
	F_DURATION,
	F_ALL,
	F_ALL_USERS,
	F_MEAN,
	F_SEED,
	F_SUBBUF,
	F_NUMSUBBUF,
	F_NO_STACKS,
	F_NO_MALLOC,
	NFLAGS
};

static const struct rasp_cli_flag flags[NFLAGS] = {
    [F_OUTPUT] = {"output", 'o', "DIR",
		  "trace directory (default rasp-YYYYMMDD-HHMMSS); must not exist or be an empty "
		  "directory of yours; "
		  "with -p: the .nettrace file (default rasp-PID-YYYYMMDD-HHMMSS.nettrace), "
		  "which must not exist"},
    [F_PID] = {"pid", 'p', "PID",
	       "attach to running process PID (.NET 10, or a rasp program with "
	       "RASP_DIAGNOSTICS=1) through its diagnostic socket instead of running PROGRAM"},
    [F_DURATION] = {"duration", 0, "SECONDS",
		    "with -p: stop after SECONDS (default: at Ctrl-C or when PID exits)"},
    [F_ALL] = {"all", 'a', NULL,
	       "record every process of your user while PROGRAM runs, not only PROGRAM's own "
	       "(for programs it starts, or that already run: rasp record -a -- sleep 30)"},
    [F_ALL_USERS] = {"all-users", 0, NULL, "with -a: every user's processes too"},
    [F_MEAN] = {"mean", 0, "BYTES",
		"sampling mean of rasp programs (RASP_SAMPLING_MEAN; K, M, G suffixes)"},
    [F_SEED] = {"seed", 0, "N", "fixed sampling seed for reproducible runs (RASP_SEED)"},
    [F_SUBBUF] = {"subbuf-size", 0, "BYTES",
		  "per-CPU sub-buffer size, power of 2 (default: from the CPUs and the mean)"},
    [F_NUMSUBBUF] = {"num-subbuf", 0, "N", "sub-buffers per CPU, power of 2 (default 4)"},
    [F_NO_STACKS] = {"no-stacks", 0, NULL,
		     "record no call stacks (by default each sample has its stack, and the "
		     "loaded objects are recorded to name its functions)"},
    [F_NO_MALLOC] = {"no-malloc", 0, NULL,
		     "never preload librasp-malloc.so (by default a PROGRAM that does not link "
		     "librasp gets it as its malloc)"},
};

/* A buffer flag: an integer in [min, max] that LTTng takes only as a power of 2. */
static int pow2_flag(const char *flag, const char *value, uint64_t min, uint64_t max, bool suffixes,
		     uint64_t *out)
{
	if (rasp_cli_parse_u64("record", flag, value, min, max, suffixes, out))
		return -1;
	if (*out & (*out - 1)) {
		rasp_cli_error("record", "%s '%s' is not a power of 2", flag, value);
		return -1;
	}
	return 0;
}

static int on_flag(void *ctx, size_t f, const char *value)
{
	struct rasp_record_args *a = ctx;
	const char *cmd = "record";
	uint64_t v;

	switch (f) {
	case F_OUTPUT:
		a->output = value;
		return 0;
	case F_PID:
		if (rasp_cli_parse_u64(cmd, "-p", value, 1, INT32_MAX, false, &v))
			return -1;
		a->pid = (long)v;
		return 0;
	case F_DURATION: {
		char *end;
		double d;

		errno = 0;
		d = strtod(value, &end);
		if (errno || end == value || *end || !(d > 0) || d > 1e7) {
			rasp_cli_error(
			    cmd, "--duration '%s' is not a number of seconds in (0, 1e7]", value);
			return -1;
		}
		a->duration = d;
		return 0;
	}
	case F_ALL:
		a->launch_flag = "-a";
		a->s.all_processes = true;
		return 0;
	case F_ALL_USERS:
		a->launch_flag = "--all-users";
		a->s.all_users = true;
		return 0;
	case F_MEAN:
		a->launch_flag = "--mean";
		if (rasp_cli_parse_u64(cmd, "--mean", value, 1, RASP_MAX_SAMPLING_MEAN, true, &v))
			return -1;
		snprintf(a->mean_env, sizeof(a->mean_env), "RASP_SAMPLING_MEAN=%" PRIu64, v);
		a->mean = v;
		return 0;
	case F_NO_STACKS:
		a->launch_flag = "--no-stacks";
		a->s.stacks = false;
		return 0;
	case F_NO_MALLOC:
		a->launch_flag = "--no-malloc";
		a->no_malloc = true;
		return 0;
	case F_SEED:
		a->launch_flag = "--seed";
		if (rasp_cli_parse_u64(cmd, "--seed", value, 0, UINT64_MAX, false, &v))
			return -1;
		snprintf(a->seed_env, sizeof(a->seed_env), "RASP_SEED=%" PRIu64, v);
		return 0;
	case F_SUBBUF:
		a->launch_flag = "--subbuf-size";
		/* 4 KiB is LTTng's smallest; past 256 MiB a sub-buffer is no longer a buffer. */
		return pow2_flag("--subbuf-size", value, 4096, UINT64_C(256) << 20, true,
				 &a->s.subbuf_size);
	case F_NUMSUBBUF:
		a->launch_flag = "--num-subbuf";
		return pow2_flag("--num-subbuf", value, 2, 1024, false, &a->s.num_subbuf);
	}
	return -1;
}

void rasp_cli_record_usage(void)
{
	fputs(
	    "usage: rasp record [options] -- PROGRAM [ARGS...]\n"
	    "       rasp record -p PID [--duration SECONDS] [-o FILE.nettrace]\n"
	    "Runs PROGRAM under an LTTng session recording DotNETRuntime:AllocationSampled and\n"
	    "rasp's own events (contexts vpid, vtid, procname), then prints the trace directory,\n"
	    "the events and samples it holds and the events lost. Exits with PROGRAM's status\n"
	    "(128+N when a signal N ended it; signals sent to rasp are passed on to PROGRAM), or\n"
	    "1 when PROGRAM succeeded but the trace is incomplete. A session daemon is started\n"
	    "when none is running; the session is destroyed as rasp record ends.\n"
	    "With -p, starts an EventPipe session in running process PID over its diagnostic\n"
	    "socket, as dotnet-trace does, writes the stream to FILE.nettrace as it arrives, and\n"
	    "prints its report when the session ends (Ctrl-C, --duration, or PID's exit).\n",
	    stdout);
	rasp_cli_args_help(NULL, flags, NFLAGS);
}

/* Buffers too small lose events; too large cannot be allocated (every CPU gets them). */
static int check_buffers(const char *cmd, const struct rasp_session *s, bool user)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF), pages = sysconf(_SC_PHYS_PAGES);
	long page = sysconf(_SC_PAGESIZE);
	uint64_t per_cpu = s->subbuf_size * s->num_subbuf;

	if (cpus < 1)
		cpus = 1;
	if (pages > 0 && page > 0 &&
	    per_cpu > (uint64_t)pages * (uint64_t)page / 2 / (uint64_t)cpus) {
		rasp_cli_error(cmd,
			       "buffers of %" PRIu64 " MiB per CPU on %ld CPUs exceed half of this "
			       "machine's memory; use a smaller --subbuf-size or --num-subbuf",
			       per_cpu >> 20, cpus);
		return -EINVAL;
	}
	if (per_cpu < SMALL_BUFFERS && user)
		fprintf(stderr,
			"rasp record: warning: buffers of %" PRIu64
			" KiB per CPU are small: a busy "
			"program will lose events (they are counted, and the report says so)\n",
			per_cpu >> 10);
	return 0;
}

static uint64_t floor_pow2(uint64_t x)
{
	uint64_t p = 1;

	while (p <= x / 2)
		p *= 2;
	return p;
}

void rasp_cli_record_default_buffers(uint64_t mean, long cpus, uint64_t *subbuf_size,
				     uint64_t *num_subbuf)
{
	double per_cpu;
	uint64_t bytes, num = *num_subbuf ? *num_subbuf : DEFAULT_NUM_SUBBUF;

	if (cpus < 1)
		cpus = 1;
	/* A larger mean is no smaller buffer: a program that allocates fast still fills one
	 * quickly (128 KiB per CPU lost events at mean 1 MiB on a loaded machine). */
	if (mean < 1 || mean > RASP_DEFAULT_SAMPLING_MEAN)
		mean = RASP_DEFAULT_SAMPLING_MEAN;
	per_cpu = (double)BUFFER_BUDGET * ((double)RASP_DEFAULT_SAMPLING_MEAN / (double)mean) /
		  (double)cpus;
	bytes = per_cpu >= (double)MAX_PER_CPU	 ? MAX_PER_CPU
		: per_cpu <= (double)MIN_PER_CPU ? MIN_PER_CPU
						 : floor_pow2((uint64_t)per_cpu);
	*num_subbuf = num;
	if (!*subbuf_size)
		*subbuf_size = bytes / num >= 4096 ? bytes / num : 4096;
}

int rasp_cli_record_parse(int argc, char **argv, struct rasp_record_args *a, int *first)
{
	const char *cmd = "record";
	bool user;
	int rc;

	*a = (struct rasp_record_args){.s = {.guard_fd = -1, .stacks = true}};
	rc = rasp_cli_args_parse(cmd, argc, argv, NULL, NULL, flags, NFLAGS, on_flag, a, true,
				 first);
	if (rc != RASP_CLI_ARGS_OK)
		return rc;
	if (a->pid) {
		if (*first < argc) {
			rasp_cli_error(cmd,
				       "-p %ld and PROGRAM '%s' given: record one or the other",
				       a->pid, argv[*first]);
			return RASP_CLI_ARGS_USAGE;
		}
		if (a->launch_flag) {
			rasp_cli_error(cmd, "%s is for a PROGRAM rasp runs, not with -p",
				       a->launch_flag);
			return RASP_CLI_ARGS_USAGE;
		}
		return RASP_CLI_ARGS_OK;
	}
	if (a->duration > 0) {
		rasp_cli_error(cmd,
			       "--duration goes with -p (a PROGRAM is recorded until it exits)");
		return RASP_CLI_ARGS_USAGE;
	}
	if (*first >= argc) {
		rasp_cli_error(cmd, "no PROGRAM given (usage: rasp record [options] -- PROGRAM "
				    "[ARGS...])");
		return RASP_CLI_ARGS_USAGE;
	}
	if (a->s.all_users && !a->s.all_processes) {
		rasp_cli_error(cmd, "--all-users goes with -a");
		return RASP_CLI_ARGS_USAGE;
	}
	user = a->s.subbuf_size || a->s.num_subbuf;
	if (!a->s.subbuf_size || !a->s.num_subbuf) {
		uint64_t mean = a->mean;
		const char *env = getenv("RASP_SAMPLING_MEAN");

		if (!mean && env)
			mean = strtoull(env, NULL, 10); /* the program's own; 0 if not a number */
		rasp_cli_record_default_buffers(mean, sysconf(_SC_NPROCESSORS_CONF),
						&a->s.subbuf_size, &a->s.num_subbuf);
	}
	return check_buffers(cmd, &a->s, user) ? RASP_CLI_ARGS_USAGE : RASP_CLI_ARGS_OK;
}
