# Tests of the html writer (included from tests/consumer/CMakeLists.txt): stacks of the test
# program's own return addresses, symbolized from its own debug information (hence -g whatever
# the build type, and no sibling calls: a tail call leaves no frame), and the page loaded in
# headless Chromium when `chromium` is on PATH (the test says it skipped that part when not).
rasp_add_test(write-html SOURCES test-write-html.c LIBS rasp-test-golden)
target_compile_options(test-write-html PRIVATE -g -fno-optimize-sibling-calls)
set_tests_properties(write-html PROPERTIES LABELS writers TIMEOUT 900)
