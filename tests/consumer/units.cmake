# Unit tests of consumer/'s files without babeltrace2 types (included from
# tests/consumer/CMakeLists.txt): one test per source file, named after it (test-tally.c tests
# consumer/tally.c). The writers' tests (label `writers`: ctest -L writers) compare with golden
# files in expect/; RASP_UPDATE_EXPECT=1 rewrites them (then review the diff).
# The Python checks use the standard library only: the system interpreter when there is one
# (estimate.cmake looks it up; it starts ten times faster than a pyenv shim), else Python3.
find_program(RASP_SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(RASP_SYSTEM_PYTHON3)
  set(rasp_unit_python ${RASP_SYSTEM_PYTHON3})
else()
  set(rasp_unit_python ${Python3_EXECUTABLE})
endif()
set(RASP_UNIT_DEFS
  RASP_TEST_EXPECT_DIR="${CMAKE_CURRENT_SOURCE_DIR}/expect"
  RASP_TEST_PYTHON="${rasp_unit_python}")

foreach(unit index tally rows params notes output ctf-index diff event sanitize)
  rasp_add_test(${unit} SOURCES test-${unit}.c LIBS rasp-report)
  target_compile_definitions(test-${unit} PRIVATE ${RASP_UNIT_DEFS})
endforeach()

# golden.c: the writers' fixtures, the expect files and the Python checks (json.tool, csv).
add_library(rasp-test-golden STATIC golden.c)
target_link_libraries(rasp-test-golden PUBLIC rasp-test-support rasp-report)
target_compile_definitions(rasp-test-golden PUBLIC ${RASP_UNIT_DEFS})
foreach(unit format render write-text write-csv write-json write-diff)
  rasp_add_test(${unit} SOURCES test-${unit}.c LIBS rasp-test-golden)
  set_tests_properties(${unit} PROPERTIES LABELS writers)
endforeach()
