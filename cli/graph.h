/* babeltrace2 graph pieces shared by the rasp command and the tests: a reader that hands every
 * message of the traces under a directory to a function (source.ctf.fs per trace,
 * filter.utils.muxer, a simple sink). */
#ifndef RASP_CLI_GRAPH_H
#define RASP_CLI_GRAPH_H

#include <babeltrace2/babeltrace.h>

/* Calls fn for every message of every CTF trace under root, in time order. fn returns 0 to
 * go on (the message reference stays the caller's: fn only borrows it). Returns 0; -ENOENT
 * when root holds no trace; -ECANCELED when fn stopped the walk; another negative errno value
 * with a message on stderr prefixed with `who`. */
typedef int (*rasp_graph_message_fn)(const bt_message *msg, void *user);
int rasp_graph_read(const char *who, const char *root, rasp_graph_message_fn fn, void *user);

#endif /* RASP_CLI_GRAPH_H */
