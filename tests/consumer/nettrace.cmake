# Tests of the NetTrace reader (consumer/nettrace-*.c) and of source.rasp.nettrace (included
# from tests/consumer/CMakeLists.txt, after plugin.cmake):
#   nettrace-files        fixture: nettrace/make-nettrace.py writes every test file (V4, V5, V6,
#                         the guide's test vector, cut short, with losses, corrupt) and what a
#                         correct reader gives (NAME.expect) into the build tree
#   nettrace-read         the pull API on those files (test-nettrace-read.c)
#   nettrace-read-dotnet  the real .NET Core 3.0 file against TraceEvent's baseline, unzipped
#                         from ../shared by the fixture nettrace-dotnet-file; both skip visibly
#                         when ../shared is not there (a user's clone)
#   nettrace-source-files fixture: nettrace/make-source-cases.py writes the source's own cases
#                         (corrupt after their first events, V6 metadata redefined, too many
#                         event classes) into the same directory
#   source-nettrace       rasp report and babeltrace2 with source.rasp.nettrace on those files
find_program(RASP_SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(RASP_SYSTEM_PYTHON3)
  set(nt_python ${RASP_SYSTEM_PYTHON3})
else()
  set(nt_python ${Python3_EXECUTABLE})
endif()
set(nt_dir ${CMAKE_CURRENT_BINARY_DIR}/nettrace)

add_test(NAME nettrace-files
         COMMAND ${nt_python} ${CMAKE_CURRENT_SOURCE_DIR}/nettrace/make-nettrace.py --suite ${nt_dir})
set_tests_properties(nettrace-files PROPERTIES FIXTURES_SETUP nettrace-files)
# The source's own cases (late corruption, redefined metadata, the class limit), beside them.
add_test(NAME nettrace-source-files
         COMMAND ${nt_python} ${CMAKE_CURRENT_SOURCE_DIR}/nettrace/make-source-cases.py ${nt_dir})
set_tests_properties(nettrace-source-files PROPERTIES FIXTURES_SETUP nettrace-files)

rasp_add_test(nettrace-read SOURCES test-nettrace-read.c LIBS rasp-report ARGS ${nt_dir})
set_tests_properties(nettrace-read PROPERTIES FIXTURES_REQUIRED nettrace-files TIMEOUT 120)

set(nt_shared ${CMAKE_SOURCE_DIR}/../shared/data/dotnet)
set(nt_dotnet eventpipe-dotnetcore3.0-win-x64-objver4.nettrace)
set(nt_dotnet_dir ${CMAKE_CURRENT_BINARY_DIR}/nettrace-dotnet)
add_test(NAME nettrace-dotnet-file
         COMMAND sh -c "if [ ! -r \"$1\" ]; then echo 'skipped: ../shared/data/dotnet not present'; exit 77; fi; exec \"$2\" -m zipfile -e \"$1\" \"$3\""
                 sh ${nt_shared}/${nt_dotnet}.zip ${nt_python} ${nt_dotnet_dir})
set_tests_properties(nettrace-dotnet-file PROPERTIES FIXTURES_SETUP nettrace-dotnet
                     SKIP_RETURN_CODE 77)
add_test(NAME nettrace-read-dotnet
         COMMAND test-nettrace-read --dotnet ${nt_dotnet_dir}/${nt_dotnet}
                 ${nt_shared}/${nt_dotnet}.baseline.txt ${nt_shared}/${nt_dotnet}.zip)
get_test_property(nettrace-read ENVIRONMENT nt_env) # rasp_add_test's, sanitizers' included
set_tests_properties(nettrace-read-dotnet PROPERTIES FIXTURES_REQUIRED nettrace-dotnet
                     SKIP_RETURN_CODE 77 TIMEOUT 120 ENVIRONMENT "${nt_env}")

# rasp report and the babeltrace2 CLI on the generated files: the command and the plugin built.
rasp_add_test(source-nettrace SOURCES test-source-nettrace.c LIBS rasp-test-plugin-cli
              ARGS ${nt_dir})
set_tests_properties(source-nettrace PROPERTIES FIXTURES_REQUIRED nettrace-files TIMEOUT 300)
add_dependencies(test-source-nettrace rasp-cli rasp-bt2-plugin)
