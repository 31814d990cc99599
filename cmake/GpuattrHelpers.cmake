# gpuattr_add_test(NAME name SRCS ... [DEPS ...] LABELS ... [ENVIRONMENT VAR=value ...] [RUN_SERIAL]
#                  [VARIANTS label=VAR=value[|VAR2=value2] ...])
# One Catch2 executable whose TEST_CASEs are registered with ctest one by one (catch_discover_tests),
# each carrying every one of LABELS (unit, component, e2e, golden, fuzz-smoke, gpu) and ENVIRONMENT
# (generator expressions allowed). RUN_SERIAL keeps ctest -j from running them beside other tests:
# for tests that run whole traced processes and compare their timing with a simulator's.
# VARIANTS registers every TEST_CASE once per variant, named `NAME:label:case`, with the variant's
# VAR=value (several: VAR=value|VAR2=value2) added to its environment: the PyTorch tier runs once
# per torch it found and annotator path (tests/e2e/CMakeLists.txt, cmake/GpuattrTorch.cmake), and
# its test names say which.
#
# Catch2 is v2 on Debian 12 and v3 on Debian 13. The tests are written against v2's single header;
# with v3, cmake/catch2_v3_compat/ maps its names onto v3's, and v3's own main is linked.
find_package(Catch2 REQUIRED)
list(APPEND CMAKE_MODULE_PATH "${Catch2_DIR}")  # Catch.cmake lies beside Catch2's config file
include(Catch)
set(GPUATTR_HELPERS_DIR ${CMAKE_CURRENT_LIST_DIR})

# Test code is compiled with line tables only (-g1) where the build has debug info: backtraces,
# gdb and sanitizer reports keep file:line, and a test file's compile (Catch2's and nlohmann's
# templates) takes a third less. In RelWithDebInfo it is also optimized less (-O1): a test file's
# compile is code generation for Catch2's expression templates and the JSON library's, and -O2
# takes 12.9 s of CPU for tests/unit/collector/window_test.cpp where -O1 takes 9.1 s (a
# precompiled header saves under 0.6 s of either). -O0 (7.1 s) made the tests that walk large
# reports run up to six times longer (the visualization e2e's arrow binding: 5.6 s to 36 s), which
# ate the gain. CI's 30 minutes need it. The code under test (the collector, the shim, the
# simulator) keeps the build's -O2 and full -g.
set(GPUATTR_TEST_COMPILE_OPTIONS $<$<CONFIG:Debug,RelWithDebInfo>:-g1>
                                 $<$<CONFIG:RelWithDebInfo>:-O1>)

if(Catch2_VERSION VERSION_LESS 3)
  add_library(gpuattr_catch_main STATIC ${CMAKE_CURRENT_LIST_DIR}/catch_main.cpp)
  target_link_libraries(gpuattr_catch_main PUBLIC Catch2::Catch2)
  target_compile_options(gpuattr_catch_main PRIVATE ${GPUATTR_TEST_COMPILE_OPTIONS})
  set(GPUATTR_CATCH_LIST_NAMES --list-test-names-only)
else()
  add_library(gpuattr_catch_main INTERFACE)
  target_link_libraries(gpuattr_catch_main INTERFACE Catch2::Catch2WithMain)
  target_include_directories(gpuattr_catch_main SYSTEM INTERFACE
                             ${CMAKE_CURRENT_LIST_DIR}/catch2_v3_compat)
  set(GPUATTR_CATCH_LIST_NAMES --list-tests --verbosity quiet)
endif()
message(STATUS "gpuattr: Catch2 ${Catch2_VERSION}")

function(gpuattr_add_test)
  cmake_parse_arguments(ARG "RUN_SERIAL" "NAME" "SRCS;DEPS;LABELS;ENVIRONMENT;VARIANTS" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "gpuattr_add_test(${ARG_NAME}): LABELS is required")
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE gpuattr_catch_main ${ARG_DEPS})
  target_compile_options(${ARG_NAME} PRIVATE ${GPUATTR_WARNINGS} ${GPUATTR_TEST_COMPILE_OPTIONS})
  add_custom_command(TARGET ${ARG_NAME} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DTEST_EXECUTABLE=$<TARGET_FILE:${ARG_NAME}>
            "-DLIST_NAMES=${GPUATTR_CATCH_LIST_NAMES}"
            -P ${GPUATTR_HELPERS_DIR}/check_test_names.cmake
    VERBATIM)
  # The unit, component and golden tests (no e2e, gpu or fuzz-smoke label) are the sanitizer
  # tier's first step: gpuattr_fast_tier_tests (tests/CMakeLists.txt) builds just them.
  set(_slow_labels e2e gpu fuzz-smoke)
  set(_fast TRUE)
  foreach(_label IN LISTS ARG_LABELS)
    if(_label IN_LIST _slow_labels)
      set(_fast FALSE)
    endif()
  endforeach()
  if(_fast)
    set_property(GLOBAL APPEND PROPERTY GPUATTR_FAST_TIER_TESTS ${ARG_NAME})
  endif()
  # catch_discover_tests flattens list-valued PROPERTIES (a second label becomes a property name),
  # so the properties are set by a ctest include that runs after the discovered tests are added.
  if(NOT ARG_VARIANTS)
    set(ARG_VARIANTS "=")  # one registration, no label, nothing added to the environment
  endif()
  foreach(_variant IN LISTS ARG_VARIANTS)
    string(FIND "${_variant}" "=" _split)
    string(SUBSTRING "${_variant}" 0 ${_split} _label)
    math(EXPR _split "${_split} + 1")
    string(SUBSTRING "${_variant}" ${_split} -1 _variant_environment)
    string(REPLACE "|" ";" _variant_environment "${_variant_environment}")
    set(_prefix "${ARG_NAME}:")
    set(_tests ${ARG_NAME}_TESTS)
    set(_suite_name "")
    if(_label)
      set(_prefix "${ARG_NAME}:${_label}:")
      string(MAKE_C_IDENTIFIER "${ARG_NAME}_${_label}_TESTS" _tests)
      # Catch.cmake names its generated files by a hash of the arguments, not of the prefix: a
      # suite name of the variant's own (--name, which only names the run) keeps them apart.
      set(_suite_name --name "${_label}")
    endif()
    catch_discover_tests(${ARG_NAME} TEST_PREFIX "${_prefix}" TEST_LIST ${_tests}
                         EXTRA_ARGS ${_suite_name})
    set(_environment ${ARG_ENVIRONMENT} ${_variant_environment})
    set(properties "LABELS [==[${ARG_LABELS}]==]")
    if(_environment)
      string(APPEND properties " ENVIRONMENT [==[${_environment}]==]")
    endif()
    if(ARG_RUN_SERIAL)
      string(APPEND properties " RUN_SERIAL TRUE")
    endif()
    set(properties_file "${CMAKE_CURRENT_BINARY_DIR}/${_tests}_properties.cmake")
    file(GENERATE OUTPUT "${properties_file}" CONTENT
         "if(${_tests})\n  set_tests_properties(\${${_tests}} PROPERTIES ${properties})\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${properties_file}")
  endforeach()
endfunction()
