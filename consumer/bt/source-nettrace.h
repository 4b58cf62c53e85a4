/* source.rasp.nettrace, the babeltrace2 component class reading EventPipe .nettrace files:
 * its methods (registered by plugin.c, and by programs that make the class in process with
 * rasp_nettrace_source_class_create). */
#ifndef RASP_CONSUMER_SOURCE_NETTRACE_H
#define RASP_CONSUMER_SOURCE_NETTRACE_H

#include <babeltrace2/babeltrace.h>
#include <stdbool.h>
#include <stdint.h>

bt_component_class_initialize_method_status
rasp__nettrace_source_initialize(bt_self_component_source *self,
				 bt_self_component_source_configuration *config,
				 const bt_value *params, void *init_data);
void rasp__nettrace_source_finalize(bt_self_component_source *self);
/* Answers babeltrace.support-info (babeltrace2's auto-discovery): weight 1 for a file that
 * starts with the NetTrace magic, 0 for anything else. */
bt_component_class_query_method_status
rasp__nettrace_source_query(bt_self_component_class_source *cls, bt_private_query_executor *exec,
			    const char *object, const bt_value *params, void *data,
			    const bt_value **result);
bt_message_iterator_class_initialize_method_status
rasp__nettrace_iter_initialize(bt_self_message_iterator *self,
			       bt_self_message_iterator_configuration *config,
			       bt_self_component_port_output *port);
void rasp__nettrace_iter_finalize(bt_self_message_iterator *self);
bt_message_iterator_class_next_method_status
rasp__nettrace_iter_next(bt_self_message_iterator *self, bt_message_array_const msgs,
			 uint64_t capacity, uint64_t *count);

/* Trace environment entries (signed integers) by which a source says what its format fixes:
 * the sampling mean of a process's samples when no SamplingConfigured event says otherwise
 * (EventPipe: .NET's 102400), and that process. sink.rasp.report reads them. */
#define RASP_ENV_MEAN "rasp_sampling_mean"
#define RASP_ENV_PID  "rasp_sampling_pid"

/* Initialize-method data for in-process use: `ended` is told, as each file's iterator reaches
 * its end, whether the file had its end-of-stream marker (else it was cut short at
 * end_offset: an unknown number of events are missing), so a program can say so. `growing`:
 * the files are still being written (rasp report --live reads its stream as it arrives), so
 * their end is where the writer has got to, not a cut: no loss is reported for it. */
struct rasp_nettrace_source_init {
	void (*ended)(void *ctx, const char *path, bool complete, uint64_t end_offset);
	void *ctx;
	bool growing;
};

/* The class, for graphs built in process (what the plugin registers). NULL on error. */
bt_component_class_source *rasp_nettrace_source_class_create(void);

#define RASP_NETTRACE_SOURCE_DESCRIPTION                                                           \
	"Read EventPipe .nettrace files (NetTrace V4, V5, V6) as events shaped like CoreCLR's "    \
	"LTTng events."
#define RASP_NETTRACE_SOURCE_HELP                                                                  \
	"Parameters: inputs=[\"FILE.nettrace\", ...]. One output port per file. Answers "          \
	"babeltrace.support-info, so `babeltrace2 FILE.nettrace` finds it. See docs/eventpipe.md."

#endif /* RASP_CONSUMER_SOURCE_NETTRACE_H */
