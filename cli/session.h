/* An LTTng recording session for rasp record, through liblttng-ctl (the library the lttng
 * client is built on). A session never outlives its rasp record: a guard process destroys it
 * if rasp record dies without doing so (kill -9 included), and sessions left by a rasp record
 * that is gone (guard killed too) are destroyed by the next one. */
#ifndef RASP_CLI_SESSION_H
#define RASP_CLI_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rasp_session {
	char name[64];
	char output[4096];    /* trace directory */
	uint64_t subbuf_size; /* per-CPU sub-buffer bytes (power of 2) */
	uint64_t num_subbuf;  /* sub-buffers per CPU (power of 2) */
	bool all_processes;   /* record every process of uid, else only `pid` */
	bool all_users;	      /* with all_processes: every user's processes */
	bool stacks;	      /* record the samples' stacks and the objects loaded */
	int pid;	      /* the one process recorded (vpid tracker), when not all */
	uid_t uid;	      /* the user whose processes -a records */
	bool created, started;
	pid_t guard;  /* the guard process, 0 if none */
	int guard_fd; /* write end of the guard's pipe */
};

/* Connects to a session daemon, starting one (lttng-sessiond --daemonize --no-kernel, or
 * $RASP_LTTNG_SESSIOND) when none answers. */
int rasp_session_daemon_ensure(const char *cmd);

/* Names the session after this process and destroys sessions of earlier rasp records that
 * are gone, saying which. */
void rasp_session_prepare(const char *cmd, struct rasp_session *s);

/* Starts the guard: a child that destroys the session if this process ends without
 * rasp_session_destroy. 0 or -errno (recording goes on without one, with a warning). */
int rasp_session_guard(const char *cmd, struct rasp_session *s);

/* Creates the session writing to s->output, one discard-mode channel sized by s (a full
 * buffer loses events, counted, and never stalls the program), the rasp events enabled with
 * contexts vpid, vtid and procname, tracking only s->pid (or, with all_processes, uid's
 * processes, or everyone's with all_users), and starts it. */
int rasp_session_start(const char *cmd, struct rasp_session *s);
/* Adds pid to the session's process tracker (a started session that tracks s->pid). 0 or
 * -EIO with a message. */
int rasp_session_track_pid(const char *cmd, struct rasp_session *s, int pid);
/* Stops (flushes) the session: the trace is complete on disk when this returns. */
int rasp_session_stop(const char *cmd, struct rasp_session *s);
/* Destroys the session if created, and dismisses the guard. Does not wait for the session
 * daemon to finish (about 0.5 s for a UST session that ran): a stopped session's trace is
 * complete already, and the daemon ends the session by itself. */
void rasp_session_destroy(struct rasp_session *s);

#endif /* RASP_CLI_SESSION_H */
