# Turns `test_mpi --list-ctest` (one line per multi-rank entry: name ranks filter timeout_s
# labels [pass_regex]; labels: the `,`-separated cases a shared launch runs) into ctest
# entries that run it under mpirun, one core's claim for one rank, both cores' for more.
# Run after each build of test_mpi with -D TEST_EXECUTABLE, MPIEXEC, MPI_ENV
# (space-separated) and CTEST_FILE.
execute_process(COMMAND ${TEST_EXECUTABLE} --list-ctest
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "test_mpi --list-ctest failed (${result}):\n${errors}")
endif()

separate_arguments(env UNIX_COMMAND "${MPI_ENV}")
set(script "# Generated from `test_mpi --list-ctest` by tests/mpi_discover.cmake.\n")
# Bracket arguments keep filters and regular expressions verbatim.
string(REPLACE "\n" ";" lines "${listing}")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  if(NOT line MATCHES "^([^ ]+) ([0-9]+) ([^ ]+) ([0-9]+) ([^ ]+) ?(.*)$")
    message(FATAL_ERROR "test_mpi --list-ctest printed an unexpected line: ${line}")
  endif()
  set(name "${CMAKE_MATCH_1}")
  set(ranks "${CMAKE_MATCH_2}")
  set(filter "${CMAKE_MATCH_3}")
  set(timeout "${CMAKE_MATCH_4}")
  string(REPLACE "," ";" labels "${CMAKE_MATCH_5}")
  set(pass_regex "${CMAKE_MATCH_6}")
  set(processors 2)
  if(ranks EQUAL 1)
    set(processors 1)
  endif()
  string(APPEND script
    "add_test([==[${name}]==] [==[${MPIEXEC}]==] -np ${ranks} --oversubscribe --bind-to none "
    "[==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES ENVIRONMENT [==[${env}]==] "
    "TIMEOUT ${timeout} PROCESSORS ${processors} LABELS [==[${labels}]==])\n")
  if(NOT pass_regex STREQUAL "")
    string(APPEND script
      "set_tests_properties([==[${name}]==] PROPERTIES PASS_REGULAR_EXPRESSION "
      "[==[${pass_regex}]==])\n")
  endif()
  math(EXPR count "${count} + 1")
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "test_mpi --list-ctest listed no multi-rank case")
endif()
file(WRITE "${CTEST_FILE}" "${script}")
