/* rasp record's command line, parsed apart from running it (record-args.c; cmd-record.c runs
 * it), so that tests and the fuzzer drive the parsing alone. */
#ifndef RASP_CLI_RECORD_ARGS_H
#define RASP_CLI_RECORD_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"

struct rasp_record_args {
	const char *output;	 /* -o, NULL: a dated directory */
	struct rasp_session s;	 /* buffer sizes, -a, --all-users */
	char mean_env[64];	 /* RASP_SAMPLING_MEAN=... for the program, or "" */
	uint64_t mean;		 /* --mean, 0 when not given */
	char seed_env[64];	 /* RASP_SEED=... for the program, or "" */
	long pid;		 /* -p: a running process (0: none) */
	double duration;	 /* --duration, seconds (0: none) */
	const char *launch_flag; /* a flag for a launched PROGRAM only, as given, or NULL */
	bool no_malloc;		 /* --no-malloc: never preload librasp-malloc.so */
};

/* Parses flags up to PROGRAM: RASP_CLI_ARGS_OK with *first the index of PROGRAM (argc with
 * -p), RASP_CLI_ARGS_HELP, or RASP_CLI_ARGS_USAGE after a message. */
int rasp_cli_record_parse(int argc, char **argv, struct rasp_record_args *a, int *first);

/* rasp record's help, on stdout. */
void rasp_cli_record_usage(void);

/* The default per-CPU buffers for a sampling mean (0: the default mean) on `cpus` CPUs:
 * *num_subbuf sub-buffers (DEFAULT_NUM_SUBBUF when 0) of *subbuf_size bytes (computed when 0),
 * powers of 2, so that all CPUs' rings hold about 3 MiB at the default mean or a larger one, as
 * many times more at a smaller one, within 128 KiB and 64 MiB per CPU (cmd-record.c says
 * why). */
void rasp_cli_record_default_buffers(uint64_t mean, long cpus, uint64_t *subbuf_size,
				     uint64_t *num_subbuf);

#endif /* RASP_CLI_RECORD_ARGS_H */
