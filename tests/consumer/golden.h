/* Shared by the writers' golden tests (test-write-*.c): fixed tallies built by hand, a report
 * rendered into memory with its standard error captured, the comparison with a committed file
 * in tests/consumer/expect/ (RASP_UPDATE_EXPECT=1 rewrites it instead), and Python checks on
 * the output (json.tool, csv). Paths come from compile definitions (units.cmake). */
#ifndef RASP_TEST_GOLDEN_H
#define RASP_TEST_GOLDEN_H

#include <stddef.h>

#include "params.h"
#include "tally.h"

/* The fixtures. Each returns a new tally grouped by group_by.
 *   two_procs: process 6189 "emit" (SamplingConfigured 4096 on thread 6190, one thread
 *              left on the process mean) and 6192 "emit2" (no mean: 102400 assumed), four
 *              types, three kinds, 1.5 s, one input.
 *   awkward:   type names with a comma and quotes, control characters, UTF-8, invalid UTF-8,
 *              CR and LF; a process name with a comma; 257 events and 2 packets lost,
 *              3 skipped, one input warning, GCAllocationTick rows.
 *   empty:     nothing at all.
 *   ticks:     GCAllocationTick events only (older .NET) and other events.
 *   many:      seven processes, none with a mean; one with 40 samples.
 *   unknown:   no vpid/vtid context: every sample of the unknown process and thread. */
struct rasp_tally *golden_two_procs(unsigned group_by);
struct rasp_tally *golden_awkward(unsigned group_by);
struct rasp_tally *golden_empty(unsigned group_by);
struct rasp_tally *golden_ticks(unsigned group_by);
struct rasp_tally *golden_many(unsigned group_by);
struct rasp_tally *golden_unknown(unsigned group_by);

/* The awkward fixture's type names, NULL-terminated. */
extern const char *const golden_awkward_types[];

struct golden_out {
	char *out; /* what the writer wrote (NUL-terminated), caller frees */
	size_t len;
	char *err; /* what went to standard error meanwhile, caller frees */
};

/* rasp_report_render(t, opt, "--sampling-mean") into memory; fails the test unless it
 * returns 0. */
void golden_render(struct rasp_tally *t, const struct rasp_report_options *opt,
		   struct golden_out *g);
void golden_out_free(struct golden_out *g);

/* Fails the test unless text equals tests/consumer/expect/<name>; with RASP_UPDATE_EXPECT=1
 * writes it there instead (and says so). */
void golden_check(const char *text, size_t len, const char *name);

/* Runs `python3 -c script FILE` with text in FILE; returns the exit status (0 = ok), the
 * script's standard output in out (NUL-terminated, cut to outlen). */
int golden_python(const char *text, size_t len, const char *script, char *out, size_t outlen);

/* Fails the test unless `python3 -m json.tool` accepts text. */
void golden_check_json(const char *text, size_t len);

#endif /* RASP_TEST_GOLDEN_H */
