/* Recording a running process through its diagnostic socket (attach.c): rasp record -p and
 * rasp report --live -p. */
#ifndef RASP_CLI_ATTACH_H
#define RASP_CLI_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

struct rasp_attach {
	const char *cmd; /* for messages: "record" or "report" */
	pid_t pid;
	double duration; /* seconds; 0: until Ctrl-C or the process's exit */
	/* The .nettrace file (must not exist); NULL: a dated name, or with live a temporary
	 * file (0600) removed at the end. */
	const char *output;
	bool live; /* redraw the report every interval seconds while recording */
	double interval;
	/* Prints the report of the .nettrace file at path (rasp report's); its exit status. */
	int (*report)(const char *path);
	/* With live, what prints the reports instead (when not NULL): each redraw's of the file
	 * still being written (growing), and the last one's; its exit status. */
	int (*redraw)(void *ctx, const char *path, bool growing);
	void *ctx;
};

/* Records, then prints the report of what was recorded (not after a second SIGINT or
 * SIGTERM: rasp then leaves at once). Returns the exit status: 0, 1 (no socket, a socket
 * refused, a refusal, or the stream did not end cleanly) or 2 (the output exists). */
int rasp_cli_attach(const struct rasp_attach *a);

#endif /* RASP_CLI_ATTACH_H */
