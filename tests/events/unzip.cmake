# cmake -DZIP=file.zip -DDIR=dest -P unzip.cmake: extracts a test archive (no unzip needed).
# A clone without ../shared has no archive: nothing to extract, said so, and the tests that
# need it skip themselves.
file(REMOVE_RECURSE ${DIR})
if(NOT EXISTS ${ZIP})
  message("skipped: ${ZIP} not present (../shared is not beside this checkout)")
  return()
endif()
file(ARCHIVE_EXTRACT INPUT ${ZIP} DESTINATION ${DIR})
