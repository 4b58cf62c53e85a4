# Tests of the writers of stacks (included from tests/consumer/CMakeLists.txt): folded and
# pprof, on stacks of the test programs' own return addresses, symbolized from their own debug
# information: hence -g whatever the build type, and no sibling calls (a tail call leaves no
# frame to find). test-write-pprof also reads its output with `go tool pprof` when Go is on
# PATH, and says it skipped that part when not.
# stack-fixture.c holds the call tree both tests capture stacks along.
foreach(unit write-folded write-pprof)
  rasp_add_test(${unit} SOURCES test-${unit}.c stack-fixture.c LIBS rasp-report)
  target_compile_options(test-${unit} PRIVATE -g -fno-optimize-sibling-calls)
  set_tests_properties(${unit} PROPERTIES LABELS writers)
endforeach()

# The resolver (consumer/symbols.c) on this test program's own code and on objects that cannot
# be read (a missing file, a FIFO, a rebuilt object).
rasp_add_test(symbols SOURCES test-symbols.c stack-fixture.c LIBS rasp-report)
target_compile_options(test-symbols PRIVATE -g)
set_tests_properties(symbols PROPERTIES TIMEOUT 60)
