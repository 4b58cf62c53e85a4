# rasp record's failure paths and guarantees (tests/cli/test-cmd-record.c), through the real
# session daemon. The timeout turns a hang (a setup failure, a full disk) into a failure.
rasp_add_test(cmd-record LTTNG SOURCES test-cmd-record.c LIBS PkgConfig::JSON_C)
add_dependencies(test-cmd-record rasp-cli rasp-emit)
set_tests_properties(cmd-record PROPERTIES TIMEOUT 240)
