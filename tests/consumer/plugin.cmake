# Tests of the babeltrace2 plugin: the real babeltrace2 CLI on committed golden traces and the
# CoreCLR trace, graphs built in process, malformed providers recorded under a real session,
# and a live session.
find_program(RASP_BABELTRACE2 babeltrace2 REQUIRED)
find_program(RASP_TIMEOUT timeout REQUIRED)

# The CLI tests need the plugin built, and under ASan the sanitizer runtime preloaded into
# babeltrace2 (the CLI itself is not instrumented).
add_library(rasp-test-plugin-cli STATIC plugin-cli.c)
target_link_libraries(rasp-test-plugin-cli PUBLIC rasp-test-support)
target_include_directories(rasp-test-plugin-cli PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(rasp-test-plugin-cli PUBLIC
  RASP_TEST_PLUGIN_DIR="${RASP_BT2_PLUGIN_BUILD_DIR}"
  RASP_TEST_BABELTRACE2="${RASP_BABELTRACE2}"
  RASP_TEST_TIMEOUT="${RASP_TIMEOUT}"
  RASP_TEST_PYTHON="${Python3_EXECUTABLE}")
if(RASP_SANITIZE STREQUAL "address")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE rasp_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
                  OUTPUT_VARIABLE rasp_ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
  target_compile_definitions(rasp-test-plugin-cli PUBLIC
    RASP_TEST_BT2_PRELOAD="${rasp_asan}:${rasp_ubsan}"
    RASP_TEST_BT2_SANITIZER_OPTIONS="ASAN_OPTIONS=detect_leaks=1:exitcode=99")
elseif(RASP_SANITIZE STREQUAL "thread")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libtsan.so
                  OUTPUT_VARIABLE rasp_tsan OUTPUT_STRIP_TRAILING_WHITESPACE)
  target_compile_definitions(rasp-test-plugin-cli PUBLIC
    RASP_TEST_BT2_PRELOAD="${rasp_tsan}"
    RASP_TEST_BT2_SANITIZER_OPTIONS="TSAN_OPTIONS=halt_on_error=1:exitcode=66:suppressions=${CMAKE_SOURCE_DIR}/tests/tsan.supp")
endif()
add_dependencies(rasp-test-plugin-cli rasp-bt2-plugin)

rasp_add_test(plugin-cli SOURCES test-plugin-cli.c LIBS rasp-test-plugin-cli)
set_tests_properties(plugin-cli PROPERTIES TIMEOUT 300)

# Test-only providers that declare DotNETRuntime:AllocationSampled wrongly (a missing field,
# a string where an integer belongs) or fire it with bad values (offset >= size), linked straight against liblttng-ust and recorded
# under a real session by the test.
foreach(kind missing-field wrong-type bad-offset)
  add_executable(rasp-malformed-${kind} malformed/${kind}.c)
  target_include_directories(rasp-malformed-${kind} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/malformed)
  target_link_libraries(rasp-malformed-${kind} PRIVATE PkgConfig::LTTNG_UST)
endforeach()
rasp_add_test(plugin-malformed SOURCES test-plugin-malformed.c LIBS rasp-test-plugin-cli LTTNG)
add_dependencies(test-plugin-malformed rasp-malformed-missing-field rasp-malformed-wrong-type
                 rasp-malformed-bad-offset)
set_tests_properties(plugin-malformed PROPERTIES TIMEOUT 300)

# A live session through lttng-relayd on loopback ports derived from the test's pid.
rasp_add_test(plugin-live SOURCES test-plugin-live.c LIBS rasp-test-plugin-cli LTTNG)
add_dependencies(test-plugin-live rasp-emit rasp-cli rasp-stack-prog rasp-stack-plugin)
set_tests_properties(plugin-live PROPERTIES TIMEOUT 180)

# The sink in a graph built with libbabeltrace2 in the test process (no CLI in between).
rasp_add_test(plugin-graph SOURCES test-plugin-graph.c LIBS rasp-test-plugin-cli)
