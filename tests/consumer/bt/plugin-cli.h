/* Shared by the sink.rasp.report tests: run the real babeltrace2 CLI with the plugin built
 * in this tree, and compare an output file with a committed .expect file. Paths come from
 * compile definitions (tests/consumer/bt/CMakeLists.txt), never from this machine. */
#ifndef RASP_TEST_PLUGIN_CLI_H
#define RASP_TEST_PLUGIN_CLI_H

#include <stddef.h>

#define RASP_TEST_TRACES RASP_TEST_SOURCE_DIR "/tests/consumer/traces"
#define RASP_TEST_OUT	 RASP_TEST_BUILD_DIR "/test-output/consumer"

/* Runs `timeout T babeltrace2 --plugin-path=<plugin dir> [pre...] [-c sink.rasp.report -p
 * params]` (pre: NULL-terminated CLI words before the component, e.g. the trace path or
 * `-i lttng-live URL`; params NULL: no -c at all). Returns the exit status; out gets
 * stdout and stderr. Under ASan the sanitizer runtime is preloaded into babeltrace2. */
int plugin_run(char *out, size_t outlen, const char *const *pre, const char *params, int timeout_s);

/* 0 when file `got` equals `expect_rel` under tests/consumer/traces/ (both printed on
 * stderr otherwise). With RASP_UPDATE_EXPECT=1 the expect file is rewritten instead. */
int plugin_compare(const char *got, const char *expect_rel);

/* mkdir -p; 0 or -1. */
int plugin_mkdirs(const char *path);

#endif /* RASP_TEST_PLUGIN_CLI_H */
