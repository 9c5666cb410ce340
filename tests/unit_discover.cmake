# Turns `PROGRAM --gtest_list_tests` into one ctest entry per test suite, each running
# `PROGRAM --gtest_filter=Suite.*`: a suite's tests share one start of the program (loading
# libtorch takes most of a second, the tests themselves milliseconds), and `ctest -R Suite`
# still selects them. Run after each build of a unit-test program with -D TEST_EXECUTABLE,
# WORKING_DIRECTORY, TEST_ENV (';'-separated, passed with '|' in its place), TIMEOUT and
# CTEST_FILE.
execute_process(COMMAND ${TEST_EXECUTABLE} --gtest_list_tests
  WORKING_DIRECTORY ${WORKING_DIRECTORY}
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${result}):\n${errors}")
endif()

string(REPLACE "|" ";" env "${TEST_ENV}")
get_filename_component(program "${TEST_EXECUTABLE}" NAME)
set(script "# Generated from `${program} --gtest_list_tests` by tests/unit_discover.cmake.\n")
# Suites start a line ("Suite." or "Prefix/Suite.  # TypeParam = ..."); their tests are
# indented beneath.
string(REPLACE "\n" ";" lines "${listing}")
set(count 0)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^([^ #]+)\\.")
    continue()
  endif()
  set(suite "${CMAKE_MATCH_1}")
  string(APPEND script
    "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
    "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==] "
    "ENVIRONMENT [==[${env}]==] TIMEOUT ${TIMEOUT} LABELS unit)\n")
  math(EXPR count "${count} + 1")
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${program} --gtest_list_tests listed no test suite")
endif()
file(WRITE "${CTEST_FILE}" "${script}")
