# rasp record's failure paths and guarantees (tests/cli/test-cmd-record.c), through the real
# session daemon. The timeout turns a hang (a setup failure, a full disk) into a failure.
rasp_add_test(cmd-record LTTNG SOURCES test-cmd-record.c LIBS PkgConfig::JSON_C)
add_dependencies(test-cmd-record rasp-cli rasp-emit)
set_tests_properties(cmd-record PROPERTIES TIMEOUT 240)

# rasp record -p against a real rasp program and hostile servers (fake-diag-server.c): whose
# socket is used, every wait bounded, --live's temporary file. No session daemon involved.
add_executable(rasp-test-fake-diag fake-diag-server.c)
target_link_libraries(rasp-test-fake-diag PRIVATE rasp-codec)
rasp_add_test(cmd-record-attach SOURCES test-cmd-record-attach.c)
add_dependencies(test-cmd-record-attach rasp-cli rasp-test-fake-diag rasp-diag-prog)
set_tests_properties(cmd-record-attach PROPERTIES TIMEOUT 240)
