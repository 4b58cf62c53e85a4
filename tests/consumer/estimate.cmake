# Tests of consumer/estimate.c (included from tests/consumer/CMakeLists.txt).
#   estimate:        unit tests, the design doc's tables, hand-computed and bad-argument cases.
#   estimate-sim:    coverage and bias of the estimates by simulation (fixed seeds).
#   estimate-scipy:  agreement with scipy.stats.nbinom; the vectors come from
#                    estimate-vectors.py at test time (fixture estimate-vectors).
rasp_add_test(estimate SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test-estimate.c LIBS rasp-estimate)
# A hang (the quantile search looped past 2^53) fails by timeout.
set_tests_properties(estimate PROPERTIES TIMEOUT 120)
rasp_add_test(estimate-sim SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test-estimate-sim.c LIBS rasp-estimate)
set_tests_properties(estimate-sim PROPERTIES TIMEOUT 600)

# scipy is Debian's python3-scipy for /usr/bin/python3: a pyenv or venv python3 first on
# PATH usually lacks it, so the system interpreter is looked up by its path only.
find_program(RASP_SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(vectors ${CMAKE_CURRENT_BINARY_DIR}/estimate-vectors.txt)
rasp_add_test(estimate-scipy SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test-estimate-scipy.c
              LIBS rasp-estimate ARGS ${vectors})
if(RASP_SYSTEM_PYTHON3)
  add_test(NAME estimate-vectors
           COMMAND ${RASP_SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/estimate-vectors.py ${vectors})
  set_tests_properties(estimate-vectors PROPERTIES FIXTURES_SETUP estimate-vectors)
  set_tests_properties(estimate-scipy PROPERTIES FIXTURES_REQUIRED estimate-vectors)
else()
  # Without the generator the comparison cannot run: say so rather than pass silently.
  set_tests_properties(estimate-scipy PROPERTIES DISABLED TRUE)
  message(WARNING "/usr/bin/python3 not found: test estimate-scipy disabled (needs python3-scipy)")
endif()
