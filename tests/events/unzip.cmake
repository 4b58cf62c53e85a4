# cmake -DZIP=file.zip -DDIR=dest -P unzip.cmake: extracts a test archive (no unzip needed).
file(REMOVE_RECURSE ${DIR})
file(ARCHIVE_EXTRACT INPUT ${ZIP} DESTINATION ${DIR})
