/* Support for the rasp report and rasp diff tests (test-cmd-report.c, test-cmd-diff.c): a work
 * directory under the build tree, the rasp command run under a time limit (a hang fails the
 * check that ran it, with its command line), the committed traces, copies of them, their
 * packet indexes, and JSON reports. Failures go through cmocka's fail_msg. */
#ifndef RASP_TEST_CMD_SUPPORT_H
#define RASP_TEST_CMD_SUPPORT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

/* Size of the output buffers the tests pass around (stdout and stderr of one command). */
#define CMD_OUT 65536

/* Creates RASP_TEST_BUILD_DIR/test-traces/<name>-<pid>, empty; 0 or -1. */
int cmd_work_setup(const char *name);
/* Removes the work directory. */
void cmd_work_remove(void);
/* work/<rel>, in one of 16 rotating buffers. */
const char *cmd_work(const char *rel);
/* A committed trace: tests/consumer/traces/<name>, in one of 16 rotating buffers. */
const char *cmd_golden(const char *name);

/* Runs `rasp ARGS...` (args NULL-terminated, without "rasp") with env_extra added, under
 * timeout(1); returns its exit status and its output (stdout and stderr). A command that does
 * not end in time fails the test. */
int cmd_rasp(char *out, size_t outlen, const char *const *args, const char *const *env_extra);
/* Runs a tool (argv[0] a path) and fails the test unless it exits 0. */
void cmd_tool(const char *const *argv);
/* cp -r src dst. */
void cmd_copy(const char *src, const char *dst);
/* Writes text to path (replacing it). */
void cmd_write_file(const char *path, const char *text);
/* The whole file, NUL-terminated (free it); NULL if it cannot be read. */
char *cmd_read_file(const char *path);
/* Whether dir holds an entry whose name starts with prefix. */
int cmd_dir_has_prefix(const char *dir, const char *prefix);

/* rasp report --format json -o work/<tmp> ARGS...: the report, parsed; fails the test when
 * the command fails. `out` gets its output (warnings). */
json_object *cmd_report_json(char *out, size_t outlen, const char *const *args);

/* o[key], failing the test when it is absent. */
json_object *cmd_get(json_object *o, const char *key);
/* o[key] as a number, failing the test when it is absent or not a number. */
double cmd_num(json_object *o, const char *key);

/* Packets of one stream file from its index (TRACE/index/STREAM.idx): count, and the byte
 * offset of packet i (i < count). Fails the test on an unreadable index. */
size_t cmd_index_packets(const char *index_path, uint64_t *offsets, size_t max);

/* Fails the test, showing the command's output, unless out contains needle. */
void cmd_expect_in(const char *out, const char *needle, const char *what);
/* Fails the test, showing the command's output, when out contains needle. */
void cmd_expect_not_in(const char *out, const char *needle, const char *what);

#endif /* RASP_TEST_CMD_SUPPORT_H */
