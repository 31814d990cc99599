# gpuattr_add_test(NAME name SRCS ... [DEPS ...] LABELS ...)
# One Catch2 v2 executable whose TEST_CASEs are registered with ctest one by one (catch_discover_tests),
# each carrying LABELS (unit, component, e2e, golden, fuzz-smoke, gpu).
find_package(Catch2 2 REQUIRED)
include(Catch)

add_library(gpuattr_catch_main STATIC ${CMAKE_CURRENT_LIST_DIR}/catch_main.cpp)
target_link_libraries(gpuattr_catch_main PUBLIC Catch2::Catch2)

function(gpuattr_add_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS;ENVIRONMENT" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE gpuattr_catch_main ${ARG_DEPS})
  target_compile_options(${ARG_NAME} PRIVATE ${GPUATTR_WARNINGS})
  catch_discover_tests(${ARG_NAME}
    TEST_PREFIX "${ARG_NAME}:"
    PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENVIRONMENT}")
endfunction()
