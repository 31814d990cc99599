# gpuattr_collector_export: the picture exports (export/, docs/visualization.md): the Chrome
# trace-event timeline, folded stacks, speedscope profiles, fed by the analysis through its
# TraceObserver, and the self-contained HTML report rendered from a report's JSON. The HTML
# page's template (collector/data/report.html) is embedded like the rule tables.
add_custom_command(
  OUTPUT ${GPUATTR_COLLECTOR_GENERATED_DIR}/report_html.inc
  COMMAND ${CMAKE_COMMAND} -DINPUT=${GPUATTR_COLLECTOR_DATA_DIR}/report.html
          -DOUTPUT=${GPUATTR_COLLECTOR_GENERATED_DIR}/report_html.inc
          -P ${GPUATTR_COLLECTOR_DATA_DIR}/embed_text.cmake
  DEPENDS ${GPUATTR_COLLECTOR_DATA_DIR}/report.html ${GPUATTR_COLLECTOR_DATA_DIR}/embed_text.cmake
  COMMENT "Embedding collector/data/report.html"
  VERBATIM)

add_library(gpuattr_collector_export STATIC
  export/activity_lines.cpp
  export/chrome_trace.cpp
  export/exports.cpp
  export/folded_stacks.cpp
  export/html_report.cpp
  ${GPUATTR_COLLECTOR_GENERATED_DIR}/report_html.inc
)
target_include_directories(gpuattr_collector_export PRIVATE ${GPUATTR_COLLECTOR_GENERATED_DIR})
target_link_libraries(gpuattr_collector_export PUBLIC gpuattr_collector_core)
target_compile_options(gpuattr_collector_export PRIVATE ${GPUATTR_WARNINGS})
