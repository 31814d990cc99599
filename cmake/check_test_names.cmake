# Fails the build when a Catch2 test name cannot be registered faithfully with ctest: a ';' splits
# it into several names that match nothing (and so "pass" without running), and a leading '-' is
# read by the test binary as an option. Run as: cmake -DTEST_EXECUTABLE=... -DLIST_NAMES=... -P
# check_test_names.cmake, LIST_NAMES being the flags that list names one a line (Catch2 v2:
# --list-test-names-only; v3: --list-tests --verbosity quiet). Catch2 v2 exits with the number of
# tests listed, so the exit status says nothing here.
execute_process(COMMAND "${TEST_EXECUTABLE}" ${LIST_NAMES} OUTPUT_VARIABLE names)
string(REPLACE ";" "<semicolon>" names "${names}")
string(REPLACE "\n" ";" names "${names}")
foreach(name IN LISTS names)
  if(name MATCHES "<semicolon>" OR name MATCHES "^-")
    string(REPLACE "<semicolon>" ";" name "${name}")
    message(FATAL_ERROR "test name '${name}' in ${TEST_EXECUTABLE} contains ';' or starts with '-', "
                        "which ctest cannot run faithfully; reword it")
  endif()
endforeach()
