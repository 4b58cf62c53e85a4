#!/usr/bin/env bash
# Starts an LTTng session daemon when none answers; leaves a running one alone.
# Root gets the system daemon (sockets under /var/run/lttng); other users get their own,
# under LTTNG_HOME (default $HOME). Idempotent; exits non-zero only if no daemon answers.
set -euo pipefail
if lttng list >/dev/null 2>&1; then
  exit 0
fi
# --no-kernel: user-space tracing only (no kernel modules in containers or CI).
lttng-sessiond --daemonize --no-kernel
for _ in $(seq 1 50); do
  lttng list >/dev/null 2>&1 && { echo "ensure-sessiond: started lttng-sessiond"; exit 0; }
  sleep 0.1
done
echo "ensure-sessiond: lttng-sessiond did not answer after 5 s" >&2
exit 1
