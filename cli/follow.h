/* rasp record following the program's children (cli/follow.c): a socket the processes with
 * librasp-malloc announce themselves on, each added to the session's process tracker. */
#ifndef RASP_CLI_FOLLOW_H
#define RASP_CLI_FOLLOW_H

#include <stddef.h>
#include <sys/types.h>

struct rasp_follow;

/* Binds the socket (in a new private directory under $TMPDIR or /tmp) and writes
 * "RASP_RECORD_FOLLOW=PATH" into env (len bytes) for the program. NULL after a message when
 * it cannot: the program's children are then not recorded. */
struct rasp_follow *rasp_follow_open(const char *cmd, char *env, size_t len);
/* Calls fn(arg) once, on the serving thread, after pid's first announcement is answered: the
 * process is then registered with the session daemon. Set before rasp_follow_start; fn runs at
 * most once and never after rasp_follow_close returns. */
void rasp_follow_when_announced(struct rasp_follow *f, pid_t pid, void (*fn)(void *), void *arg);
/* Serves announcements for `session` (a name) until rasp_follow_close: each process that
 * announces its pid is tracked by the session before it is answered. 0 or -errno. */
int rasp_follow_start(struct rasp_follow *f, const char *session);
/* Stops serving, removes the socket and its directory; how many processes were added. */
unsigned rasp_follow_close(struct rasp_follow *f);

#endif /* RASP_CLI_FOLLOW_H */
