/* babeltrace2 graph pieces shared by the rasp command and the tests: every CTF trace under a
 * directory as a source.ctf.fs component feeding one filter.utils.muxer, and a reader that
 * hands every message of such a graph to a function. */
#ifndef RASP_CLI_GRAPH_H
#define RASP_CLI_GRAPH_H

#include <babeltrace2/babeltrace.h>

/* Adds one source.ctf.fs per CTF trace (directory holding a `metadata` file) found under
 * root, and connects all their output ports to the muxer `mux`. Returns the number of traces
 * added, 0 when there is none (nothing added), or a negative errno value with a message on
 * stderr prefixed with `who`. */
int rasp_graph_add_ctf_sources(const char *who, bt_graph *graph, const bt_plugin *ctf,
			       const char *root, const bt_component_filter *mux);

/* Calls fn for every message of every CTF trace under root, in time order: one
 * source.ctf.fs per trace, filter.utils.muxer, and a simple sink. fn returns 0 to go on
 * (the message reference stays the caller's: fn only borrows it). Returns 0; -ENOENT when
 * root holds no trace; -ECANCELED when fn stopped the walk; another negative errno value
 * with a message on stderr prefixed with `who`. */
typedef int (*rasp_graph_message_fn)(const bt_message *msg, void *user);
int rasp_graph_read(const char *who, const char *root, rasp_graph_message_fn fn, void *user);

#endif /* RASP_CLI_GRAPH_H */
