/* The rasp command: record and report sampled allocations without learning lttng session
 * management or babeltrace2 graph syntax. One file per subcommand; session.c is the only
 * file that talks to liblttng-ctl and graph.c the only one that talks to libbabeltrace2.
 * Functions return 0 or a negative errno value after printing a one-line reason. */
#ifndef RASP_CLI_H
#define RASP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Subcommands: argv[0] is the subcommand name. Return the process exit status. */
int rasp_cli_record(int argc, char **argv);
int rasp_cli_report(int argc, char **argv);
int rasp_cli_diff(int argc, char **argv);

/* Prints "rasp <cmd>: <message>" on stderr. */
void rasp_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* After getopt_long returned '?': names the offending option in one line. */
void rasp_cli_bad_option(const char *cmd, const char *arg);

/* Parses a decimal or 0x-hex unsigned integer in [min, max], with an optional K/M/G suffix
 * (powers of 1024) when `suffixes`; errors name the option and the value. */
int rasp_cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		       uint64_t max, bool suffixes, uint64_t *out);

/* --confidence: a number strictly between 0 and 1. */
int rasp_cli_parse_confidence(const char *cmd, const char *text, double *out);

/* Directory of the running executable (for the plugin next to it in the build tree). */
int rasp_cli_exe_dir(char *buf, size_t len);

/* --- session.c: an LTTng session through liblttng-ctl ------------------------------- */

struct rasp_session {
	char name[64];
	char output[4096];    /* trace directory */
	uint64_t subbuf_size; /* per-CPU sub-buffer bytes (power of 2) */
	uint64_t num_subbuf;  /* sub-buffers per CPU (power of 2) */
	bool all_processes;   /* record every process of the user, else only `pid` */
	int pid;	      /* the one process recorded (vpid tracker), when not all */
	bool created, started;
};

/* Connects to a session daemon, starting one (lttng-sessiond --daemonize --no-kernel, or
 * $RASP_LTTNG_SESSIOND) when none answers. */
int rasp_session_daemon_ensure(const char *cmd);
/* Creates the session writing to s->output, one discard-mode channel sized by s, the rasp
 * events enabled with contexts vpid, vtid and procname, tracking only s->pid unless
 * s->all_processes, and starts it. */
int rasp_session_start(const char *cmd, struct rasp_session *s);
/* Stops (flushes) the session and reports discarded events over all channels. */
int rasp_session_stop(const char *cmd, struct rasp_session *s, uint64_t *discarded);
void rasp_session_destroy(struct rasp_session *s);

/* --- graph.c: babeltrace2 graphs ---------------------------------------------------- */

/* Counts the events of the CTF traces under dir (-errno on error). */
int rasp_graph_count_events(const char *cmd, const char *dir, uint64_t *events);

/* One sink parameter with its babeltrace2 value type. */
struct rasp_graph_param {
	const char *key;
	enum { RASP_PARAM_STRING, RASP_PARAM_INT, RASP_PARAM_REAL, RASP_PARAM_BOOL } kind;
	const char *s;
	int64_t i;
	double d;
};

/* Runs source(s) -> filter.utils.muxer -> sink.rasp.report on `inputs` (directories searched
 * for CTF traces, or one net:// lttng-live URL) with the given sink parameters. */
int rasp_graph_report(const char *cmd, const char *const *inputs, size_t n_inputs,
		      const struct rasp_graph_param *params, size_t n_params);

#endif /* RASP_CLI_H */
