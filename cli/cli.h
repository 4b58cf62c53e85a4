/* The rasp command: record and report sampled allocations without learning lttng session
 * management or babeltrace2 graph syntax. One file per subcommand (cmd-*.c); session.c is the
 * only file that talks to liblttng-ctl, graph.c the only one that builds babeltrace2 graphs,
 * child.c runs the recorded program. Functions return 0 or a negative errno value after
 * printing a one-line reason. Exit status of every subcommand: 0 success, 1 failure, 2 bad
 * usage (record: the program's status otherwise). */
#ifndef RASP_CLI_H
#define RASP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/params.h"
#include "report/tally.h"

/* Subcommands: argv[0] is the subcommand name. Return the process exit status. */
int rasp_cli_record(int argc, char **argv);
int rasp_cli_report(int argc, char **argv);
int rasp_cli_diff(int argc, char **argv);
int rasp_cli_convert(int argc, char **argv);
int rasp_cli_ps(int argc, char **argv);
/* rasp report FILE with the default options: its exit status. */
int rasp_cli_report_file(const char *path);

/* --- util.c ------------------------------------------------------------------------------ */

/* Prints "rasp <cmd>: <message>" on stderr. */
void rasp_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a decimal or 0x-hex unsigned integer in [min, max], with an optional K/M/G suffix
 * (powers of 1024) when `suffixes`; errors name the option and the value. */
int rasp_cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		       uint64_t max, bool suffixes, uint64_t *out);

/* --- args.c: flags from a parameter table ------------------------------------------------- */

/* A flag of one subcommand beside its parameter table's. */
struct rasp_cli_flag {
	const char *name;    /* long name, without -- */
	char short_flag;     /* or 0 */
	const char *metavar; /* NULL: takes no value */
	const char *help;
};

/* Called for each extra flag found (index into the extra table, its value or NULL). 0 to go
 * on, or a negative value: usage error (the callback printed why). */
typedef int (*rasp_cli_flag_fn)(void *ctx, size_t flag, const char *value);

enum { RASP_CLI_ARGS_OK = 0, RASP_CLI_ARGS_HELP = 1, RASP_CLI_ARGS_USAGE = 2 };

/* Parses argv with getopt_long: --NAME VALUE for every parameter of `table` (--NAME and
 * --no-NAME for booleans), stored in opts through the table, the `extra` flags through
 * on_extra, and -h/--help. On RASP_CLI_ARGS_OK, *operands is the index of the first operand.
 * `stop_at_operand`: stop at the first operand (record: PROGRAM's own flags follow). */
int rasp_cli_args_parse(const char *cmd, int argc, char **argv, const struct rasp_param *table,
			void *opts, const struct rasp_cli_flag *extra, size_t nextra,
			rasp_cli_flag_fn on_extra, void *ctx, bool stop_at_operand, int *operands);

/* The flags' help lines, aligned, from the table and the extra flags. */
void rasp_cli_args_help(const struct rasp_param *table, const struct rasp_cli_flag *extra,
			size_t nextra);

/* --- inputs.c: what a report reads -------------------------------------------------------- */

enum rasp_input_kind {
	RASP_INPUT_CTF,	     /* a CTF trace directory (one holding a metadata file) */
	RASP_INPUT_LIVE,     /* an lttng-live URL */
	RASP_INPUT_NETTRACE, /* an EventPipe .nettrace file (recognised by its magic) */
};

struct rasp_input {
	enum rasp_input_kind kind;
	char *path;	   /* the trace directory (real path) or the URL */
	const char *given; /* the operand it came from */
	bool growing;	   /* a .nettrace file still being written: its end is no loss */
};

struct rasp_inputs {
	struct rasp_input *v;
	size_t n, cap;
	/* What the CTF traces' packet indexes say before an event is read (when collected with
	 * a tally): their stream files' bytes, the events the tracer discarded (each stream's
	 * last packet's count) and the packets lost (gaps in their sequence numbers), summed,
	 * saturating. A stream without a readable index, or past the MAX_STREAMS checked, is
	 * counted in unindexed (its file's size in stream_bytes when known): what it lost is
	 * unknown until it is read. */
	uint64_t stream_bytes, events_discarded, packets_lost;
	size_t unindexed;
};

/* Resolves operands into inputs: a directory is searched for CTF traces (at most 256 in all),
 * a file starting with "Nettrace" is an EventPipe trace, a net:// URL is a live session
 * (alone). A trace found twice (the same directory given twice,
 * or one inside another) is an error: its samples would count twice. Each CTF trace's stream
 * files are checked against their packet index; a stream cut short or missing becomes a
 * warning in t (when t is not NULL): the trace is incomplete. 0, or a negative errno value
 * with a message: -ENOENT (an operand holds no trace), -EINVAL, -E2BIG, -ENOMEM. */
int rasp_inputs_collect(const char *cmd, char *const *operands, size_t n, struct rasp_inputs *out,
			struct rasp_tally *t);
void rasp_inputs_free(struct rasp_inputs *in);
/* Whether dir holds a CTF trace (a metadata file) at any depth. */
bool rasp_inputs_any(const char *dir);

/* --- graph.c: babeltrace2 graphs ---------------------------------------------------------- */

/* Reads every input into t: sources (source.ctf.fs per trace, source.ctf.lttng-live) ->
 * filter.utils.muxer -> sink.rasp.report, built in process from the linked consumer (no
 * plugin is looked up). strict: a malformed event fails the run. 0 or -errno with the
 * babeltrace2 causes printed. */
int rasp_graph_tally(const char *cmd, const struct rasp_inputs *in, bool strict,
		     struct rasp_tally *t);

/* Writes the events of every input as one NetTrace file at path (sink.rasp.nettrace), of
 * process pid (-1: the inputs' only one); what was written goes to *stats, what the sources
 * find doubtful (a .nettrace input cut short) to warnings. 0 or -errno with the causes
 * printed. */
struct rasp_nettrace_sink_stats;
int rasp_graph_convert(const char *cmd, const struct rasp_inputs *in, const char *path, int64_t pid,
		       struct rasp_nettrace_sink_stats *stats, struct rasp_tally *warnings);

/* Writes one input as a CTF 1.8 trace in the directory dir (babeltrace2's sink.ctf.fs, which
 * creates it); what the sources find doubtful goes to warnings. 0 or -errno with the causes
 * printed. */
int rasp_graph_convert_ctf(const char *cmd, const struct rasp_inputs *in, const char *dir,
			   struct rasp_tally *warnings);

/* Loads babeltrace2's ctf and utils plugins now, for the reads to come (rasp record does it
 * while its program runs); nothing said if they are missing, as the read will say it. */
void rasp_cli_graph_warm(void);

/* Resolves operands and reads them into t, as rasp report does (warnings included). */
int rasp_cli_tally_operands(const char *cmd, char *const *operands, size_t n, bool strict,
			    struct rasp_tally *t);
/* The same for a .nettrace file still being written (rasp report --live): its end is where
 * the stream has got to, which is no loss. */
int rasp_cli_tally_growing(const char *cmd, const char *path, bool strict, struct rasp_tally *t);

#endif /* RASP_CLI_H */
