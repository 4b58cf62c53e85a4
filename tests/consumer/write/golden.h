/* Shared by the writers' golden tests (test-write-*.c): fixed tallies built by hand, a report
 * rendered into memory with its standard error captured, the comparison with a committed file
 * in tests/consumer/write/expect/ (RASP_UPDATE_EXPECT=1 rewrites it instead), and Python checks on
 * the output (json.tool, csv). Paths come from compile definitions (units.cmake). */
#ifndef RASP_TEST_GOLDEN_H
#define RASP_TEST_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>

#include "report/params.h"
#include "report/tally.h"

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
/*   hostile:   what a traced program controls, aimed at a terminal or a spreadsheet: type,
 *              process (thread) and method names, a module path, an input and a warning
 *              holding ESC sequences (ESC[2J, OSC title), BEL, a C1 CSI, bidirectional
 *              overrides and isolates, and formulas (=cmd|..., +, -, @); "-42" and "+1.5e3"
 *              are numbers. Two processes (300, 301), every sample with a two-frame stack
 *              (a .NET method, then an unresolved frame of the module). */
struct rasp_tally *golden_hostile(unsigned group_by);

/* The awkward and hostile fixtures' type names, NULL-terminated; the hostile one's process
 * names, method name and module path. */
extern const char *const golden_awkward_types[];
extern const char *const golden_hostile_types[];
extern const char golden_hostile_proc300[], golden_hostile_proc301[], golden_hostile_method[],
    golden_hostile_module[];

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

/* Fails the test unless text equals tests/consumer/write/expect/<name>; with RASP_UPDATE_EXPECT=1
 * writes it there instead (and says so). */
void golden_check(const char *text, size_t len, const char *name);

/* Runs `python3 -c script FILE` with text in FILE; returns the exit status (0 = ok), the
 * script's standard output in out (NUL-terminated, cut to outlen). */
int golden_python(const char *text, size_t len, const char *script, char *out, size_t outlen);

/* Fails the test unless `python3 -m json.tool` accepts text. */
void golden_check_json(const char *text, size_t len);

/* Fails the test, naming the offset, when text holds what a terminal would act on (checked
 * byte by byte, apart from consumer/write/sanitize.c): a C0 byte other than LF (and tab when
 * tabs), DEL, a UTF-8 C1 control (C2 80..9F) or a bidirectional control (E2 80 AA..AE,
 * E2 81 A6..A9). */
void golden_check_inert(const char *text, size_t len, bool tabs, const char *what);

#endif /* RASP_TEST_GOLDEN_H */
