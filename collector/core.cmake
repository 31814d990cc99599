add_library(gpuattr_collector_core STATIC
  base/status.cpp
  analysis/attribution.cpp
  analysis/kernel_family.cpp
  analysis/process_trace.cpp
  report/atomic_write.cpp
  report/refusal_catalogue.cpp
  report/render_summary.cpp
  report/report_builder.cpp
)
target_include_directories(gpuattr_collector_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpuattr_collector_core PUBLIC gpuattr_wire nlohmann_json::nlohmann_json)
target_compile_options(gpuattr_collector_core PRIVATE ${GPUATTR_WARNINGS})
