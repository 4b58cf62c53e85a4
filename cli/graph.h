/* babeltrace2 graph pieces shared by the rasp command and the tests: every CTF trace under a
 * directory as a source.ctf.fs component feeding one filter.utils.muxer. */
#ifndef RASP_CLI_GRAPH_H
#define RASP_CLI_GRAPH_H

#include <babeltrace2/babeltrace.h>

/* Adds one source.ctf.fs per CTF trace (directory holding a `metadata` file) found under
 * root, and connects all their output ports to the muxer `mux`. Returns the number of traces
 * added, 0 when there is none (nothing added), or a negative errno value with a message on
 * stderr prefixed with `who`. */
int rasp_graph_add_ctf_sources(const char *who, bt_graph *graph, const bt_plugin *ctf,
			       const char *root, const bt_component_filter *mux);

#endif /* RASP_CLI_GRAPH_H */
