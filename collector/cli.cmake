# The gpuattr executable and its socket ingest (see collector/CMakeLists.txt).
#   gpuattr_collector_ingest: the socket server (ingest/) and the command line (cli/), a library
#                             so component tests link the same code the executable runs;
#   gpuattr:                  main.cpp alone.
add_library(gpuattr_collector_ingest STATIC
  ingest/socket_server.cpp
  cli/child_process.cpp
  cli/cli.cpp
  cli/private_dir.cpp
  cli/report_command.cpp
  cli/run.cpp
  cli/shim_locator.cpp
)
target_include_directories(gpuattr_collector_ingest PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpuattr_collector_ingest PUBLIC gpuattr_collector_core gpuattr_wire)
target_compile_definitions(gpuattr_collector_ingest PRIVATE GPUATTR_VERSION="${PROJECT_VERSION}")
target_compile_options(gpuattr_collector_ingest PRIVATE ${GPUATTR_WARNINGS})

add_executable(gpuattr main.cpp)
target_link_libraries(gpuattr PRIVATE gpuattr_collector_ingest)
target_compile_options(gpuattr PRIVATE ${GPUATTR_WARNINGS})
