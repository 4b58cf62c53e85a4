/* The client side of the .NET diagnostic IPC protocol (events/diag-protocol.h has the bytes):
 * finding a process's diagnostic socket as dotnet-trace does, listing the processes that have
 * one, starting and stopping an EventPipe session. The only file of the CLI that opens a
 * diagnostic socket. Functions print a one-line reason and return a negative errno value on
 * failure. */
#ifndef RASP_CLI_DIAG_CLIENT_H
#define RASP_CLI_DIAG_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The newest dotnet-diagnostic-PID-*-socket in the process's TMPDIR (read from its
 * environment; /tmp without one) into path. 0, -ENOENT (no socket: not a .NET process, or a
 * rasp program without the server) or -ENAMETOOLONG. */
int rasp_diag_find_socket(const char *cmd, pid_t pid, char *path, size_t cap);

/* Calls fn for each process with a diagnostic socket in dir (NULL: $TMPDIR or /tmp) that
 * still runs, in pid order. Returns how many, or a negative errno value. */
int rasp_diag_list(const char *dir, void (*fn)(void *arg, pid_t pid, const char *socket),
		   void *arg);

/* Starts a session of pid's runtime for AllocationSampled (and what names a .NET stack's
 * frames): connects, sends CollectTracing2, reads the reply. The connected socket (the
 * NetTrace stream follows on it) goes to *fd and the session id to *session. 0 or a negative
 * errno value; -EPROTO when the process answered with an error (said with its HRESULT). */
int rasp_diag_start(const char *cmd, const char *socket, int *fd, uint64_t *session);

/* Sends StopTracing for session on a new connection and reads the reply. 0 or a negative
 * errno value. */
int rasp_diag_stop(const char *cmd, const char *socket, uint64_t session);

#endif /* RASP_CLI_DIAG_CLIENT_H */
