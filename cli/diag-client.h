/* The client side of the .NET diagnostic IPC protocol (codec/diag-protocol.h has the bytes):
 * finding a process's diagnostic socket as dotnet-trace does, and trusting it only when it is
 * that process's; listing the processes that have one; starting and stopping an EventPipe
 * session with every wait bounded. The only file of the CLI that opens a diagnostic socket.
 * Functions print a one-line reason and return a negative errno value on failure. */
#ifndef RASP_CLI_DIAG_CLIENT_H
#define RASP_CLI_DIAG_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How long one command may take (connecting, sending, the reply), and what ends it sooner:
 * cancelled, when not NULL, is asked at least every 100 ms; true ends the command with
 * -ECANCELED. Every command takes one (never NULL). */
struct rasp_diag_wait {
	double timeout_s;
	bool (*cancelled)(void *arg);
	void *arg;
};

/* The process's diagnostic socket into path: the dotnet-diagnostic-PID-KEY-socket of its
 * TMPDIR (read from its environment; /tmp without one) whose KEY is the process's start time
 * (field 22 of /proc/PID/stat, what .NET and librasp put there), owned by the process's user
 * or root. A socket that fails a check (another user's file, a key of an earlier process
 * with this pid) is refused, said why. 0, -ENOENT (none: not a .NET process, or a rasp
 * program without the server), -EPERM (refused), -ENAMETOOLONG, or -errno from /proc. */
int rasp_diag_find_socket(const char *cmd, pid_t pid, char *path, size_t cap);

/* Calls fn for each process with a diagnostic socket in dir (NULL: $TMPDIR or /tmp) that
 * still runs and passes rasp_diag_find_socket's checks, in pid order, saying nothing of the
 * others. Returns how many, or a negative errno value. */
int rasp_diag_list(const char *dir, void (*fn)(void *arg, pid_t pid, const char *socket),
		   void *arg);

/* Starts a session of pid's runtime for AllocationSampled (and what names a .NET stack's
 * frames): connects to socket (whose server must be pid itself), sends CollectTracing2, reads
 * the reply, all within w. The connected socket (non-blocking; the NetTrace stream follows on
 * it) goes to *fd and the session id to *session. 0 or a negative errno value; -EPROTO when
 * the process answered with an error (said with its HRESULT). */
int rasp_diag_start(const char *cmd, const char *socket, pid_t pid, const struct rasp_diag_wait *w,
		    int *fd, uint64_t *session);

/* Sends StopTracing for session on a new connection and reads the reply, within w. 0 or a
 * negative errno value. */
int rasp_diag_stop(const char *cmd, const char *socket, pid_t pid, const struct rasp_diag_wait *w,
		   uint64_t session);

/* For the fuzzer: sends msg (n bytes) on the connected non-blocking socket fd and reads the
 * reply to `what` as the commands do: 0 with an OK reply's 8-byte payload in *v, or a
 * negative errno value after a message (-EPROTO: an error reply or malformed bytes). */
int rasp__diag_exchange(const char *cmd, int fd, const uint8_t *msg, size_t n, const char *what,
			const struct rasp_diag_wait *w, uint64_t *v);

/* For the fuzzer: the pid and key of a socket's file name "dotnet-diagnostic-PID-KEY-socket";
 * 0, or -EINVAL when name is not one. */
int rasp__diag_socket_name(const char *name, long *pid, unsigned long long *key);

#endif /* RASP_CLI_DIAG_CLIENT_H */
