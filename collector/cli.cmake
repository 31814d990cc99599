# The gpuattr executable and its socket ingest (see collector/CMakeLists.txt).
#   gpuattr_collector_ingest: the socket server (ingest/) and the command line (cli/), a library
#                             so component tests link the same code the executable runs;
#   gpuattr_collector_import: trace import (import/): Kineto JSON and Nsight Systems SQLite to
#                             wire records for ProcessTrace;
#   gpuattr:                  main.cpp alone.
find_package(ZLIB REQUIRED)
find_package(simdjson REQUIRED)
add_library(gpuattr_collector_import STATIC
  import/compiled_graph_calls.cpp
  import/decimal_time.cpp
  import/imported_trace.cpp
  import/json_event_stream.cpp
  import/kineto_importer.cpp
  import/pytorch_model.cpp
  import/nsys_importer.cpp
  import/trace_replay.cpp
)
target_include_directories(gpuattr_collector_import PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpuattr_collector_import
  PUBLIC gpuattr_collector_core gpuattr_wire
  PRIVATE ZLIB::ZLIB simdjson::simdjson ${GPUATTR_SQLITE})
target_compile_options(gpuattr_collector_import PRIVATE ${GPUATTR_WARNINGS})

# gpuattr_collector_ptrace: loading the shim into a running process that was not started under
# gpuattr (ptrace/, docs/attach.md §Injection). The remote call is the one architecture-specific
# unit; x86-64 is the only one implemented, elsewhere `attach` cannot inject and says so.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  set(GPUATTR_REMOTE_CALL ptrace/remote_call_x86_64.cpp)
else()
  set(GPUATTR_REMOTE_CALL ptrace/remote_call_unsupported.cpp)
endif()
add_library(gpuattr_collector_ptrace STATIC
  ptrace/library_injector.cpp
  ptrace/process_image.cpp
  ptrace/process_tree.cpp
  ptrace/thread_stop.cpp
  ${GPUATTR_REMOTE_CALL}
)
target_include_directories(gpuattr_collector_ptrace PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpuattr_collector_ptrace PUBLIC gpuattr_collector_core)
target_compile_options(gpuattr_collector_ptrace PRIVATE ${GPUATTR_WARNINGS})

add_library(gpuattr_collector_ingest STATIC
  ingest/attach_session.cpp
  ingest/daemon_reports.cpp
  ingest/daemon_attach.cpp
  ingest/daemon_server.cpp
  ingest/socket_server.cpp
  cli/analysis_flags.cpp
  cli/attach_command.cpp
  cli/child_process.cpp
  cli/cli.cpp
  cli/daemon_command.cpp
  cli/daemon_socket.cpp
  cli/diff_command.cpp
  cli/export_command.cpp
  cli/gate_command.cpp
  cli/import_command.cpp
  cli/merge_command.cpp
  cli/kept_kernel_maps.cpp
  cli/output_names.cpp
  cli/private_dir.cpp
  cli/report_command.cpp
  cli/run.cpp
  cli/shim_loading.cpp
  cli/shim_locator.cpp
)
target_include_directories(gpuattr_collector_ingest PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpuattr_collector_ingest PUBLIC gpuattr_collector_core gpuattr_wire gpuattr_collector_import)
target_link_libraries(gpuattr_collector_ingest PUBLIC gpuattr_collector_gate)
target_link_libraries(gpuattr_collector_ingest PUBLIC gpuattr_collector_export)
target_link_libraries(gpuattr_collector_ingest PUBLIC gpuattr_collector_ptrace)
target_compile_options(gpuattr_collector_ingest PRIVATE ${GPUATTR_WARNINGS})

# The Python annotator (python/gpuattr_site, docs/pytorch.md): copied beside the build tree's
# executable, where `gpuattr run` looks for it (cli/shim_locator.h), and the NVTX library it calls
# when torch has no NVTX binding (the CUDA toolkit's libnvtx3interop; empty when the toolkit has
# none: the annotator then asks the dynamic loader for it by name).
foreach(_site_file sitecustomize.py gpuattr_step_timer.py gpuattr_pytorch/__init__.py
                   gpuattr_pytorch/backward.py gpuattr_pytorch/compat.py
                   gpuattr_pytorch/compiled.py gpuattr_pytorch/compiled_graphs.py
                   gpuattr_pytorch/kernel_map_cache.py
                   gpuattr_pytorch/flops.py
                   gpuattr_pytorch/flop_rules.json gpuattr_pytorch/modules.py
                   gpuattr_pytorch/module_calls.py
                   gpuattr_pytorch/nvtx.py gpuattr_pytorch/op_mode.py gpuattr_pytorch/patches.py
                   gpuattr_pytorch/ranges.py gpuattr_pytorch/steps.py)
  configure_file(${PROJECT_SOURCE_DIR}/python/gpuattr_site/${_site_file}
                 ${PROJECT_BINARY_DIR}/python/gpuattr_site/${_site_file} COPYONLY)
endforeach()
find_file(GPUATTR_NVTX_INTEROP_LIBRARY libnvtx3interop.so.1
          HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 NO_DEFAULT_PATH)
if(NOT GPUATTR_NVTX_INTEROP_LIBRARY)
  set(GPUATTR_NVTX_INTEROP_LIBRARY "")
endif()
target_compile_definitions(gpuattr_collector_ingest
  PRIVATE GPUATTR_NVTX_LIBRARY_PATH="${GPUATTR_NVTX_INTEROP_LIBRARY}")

add_executable(gpuattr main.cpp)
target_link_libraries(gpuattr PRIVATE gpuattr_collector_ingest)
target_compile_options(gpuattr PRIVATE ${GPUATTR_WARNINGS})
# `gpuattr run` serves the annotator's compiled core (python/CMakeLists.txt) where it is built.
if(TARGET gpuattr_python_core)
  add_dependencies(gpuattr gpuattr_python_core)
endif()
