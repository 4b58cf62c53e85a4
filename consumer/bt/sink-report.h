/* sink.rasp.report, the babeltrace2 component class: its methods (registered by plugin.c,
 * and by programs that build the class in process with rasp_report_sink_class_create), and
 * the data a program may hand its initialize method. */
#ifndef RASP_CONSUMER_SINK_REPORT_H
#define RASP_CONSUMER_SINK_REPORT_H

#include <babeltrace2/babeltrace.h>

#include "report/params.h" /* the defaults and choices the help names */
#include "report/tally.h"

/* Initialize-method data for in-process use: the sink counts into `tally` (its group-by and
 * default mean are the tally's; those parameters are still validated) and writes nothing at
 * END, leaving the report to the caller. NULL init data: the sink makes its own tally and
 * writes the report at END, as in a babeltrace2 command line. */
struct rasp_report_sink_init {
	struct rasp_tally *tally;
};

bt_component_class_initialize_method_status
rasp__report_sink_initialize(bt_self_component_sink *self,
			     bt_self_component_sink_configuration *config, const bt_value *params,
			     void *init_data);
void rasp__report_sink_finalize(bt_self_component_sink *self);
bt_component_class_sink_graph_is_configured_method_status
rasp__report_sink_graph_is_configured(bt_self_component_sink *self);
bt_component_class_sink_consume_method_status
rasp__report_sink_consume(bt_self_component_sink *self);

/* The class, for graphs built in process (what the plugin registers). NULL on error. */
bt_component_class_sink *rasp_report_sink_class_create(void);

#define RASP_REPORT_SINK_DESCRIPTION                                                               \
	"Estimate allocated bytes and objects per type, kind, thread, process, site or stack "     \
	"from DotNETRuntime:AllocationSampled events."
/* From the report's parameter table's own choices and defaults (report/params.h). */
/* clang-format off */
#define RASP_REPORT_SINK_HELP                                                                      \
	"Parameters: format=" RASP_REPORT_FORMATS                                                  \
	", group-by=\"KEY,...\" (" RASP_REPORT_KEYS ")"                                            \
	", confidence=" RASP_STR(RASP_REPORT_DEFAULT_CONFIDENCE)                                   \
	", sampling-mean=" RASP_STR(RASP_DEFAULT_SAMPLING_MEAN)                                    \
	", top=N (text), output=\"FILE\", strict=true|false. See docs/consumer.md."
/* clang-format on */

#endif /* RASP_CONSUMER_SINK_REPORT_H */
