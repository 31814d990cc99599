# The default rule tables (collector/data/*.json) become raw string literals included by
# analysis/rule_file.cpp (and the device peak table by report/work_report.cpp), regenerated whenever a table changes: the binary needs no data files.
set(GPUATTR_COLLECTOR_DATA_DIR ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(GPUATTR_COLLECTOR_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
set(GPUATTR_COLLECTOR_EMBEDDED)
foreach(table family_rules phase_rules device_peaks)
  add_custom_command(
    OUTPUT ${GPUATTR_COLLECTOR_GENERATED_DIR}/${table}.inc
    COMMAND ${CMAKE_COMMAND} -DINPUT=${GPUATTR_COLLECTOR_DATA_DIR}/${table}.json
            -DOUTPUT=${GPUATTR_COLLECTOR_GENERATED_DIR}/${table}.inc
            -P ${GPUATTR_COLLECTOR_DATA_DIR}/embed_text.cmake
    DEPENDS ${GPUATTR_COLLECTOR_DATA_DIR}/${table}.json ${GPUATTR_COLLECTOR_DATA_DIR}/embed_text.cmake
    COMMENT "Embedding collector/data/${table}.json"
    VERBATIM)
  list(APPEND GPUATTR_COLLECTOR_EMBEDDED ${GPUATTR_COLLECTOR_GENERATED_DIR}/${table}.inc)
endforeach()

add_library(gpuattr_collector_core STATIC
  base/check.cpp
  base/os.cpp
  base/status.cpp
  analysis/activity_folder.cpp
  analysis/attribution_rules.cpp
  analysis/backward_threads.cpp
  analysis/compiled_graph_join.cpp
  analysis/copy_fold.cpp
  analysis/device_sweep.cpp
  analysis/family_fold.cpp
  analysis/host_range_fold.cpp
  analysis/kernel_family.cpp
  analysis/kernel_maps.cpp
  analysis/launch_join.cpp
  analysis/module_fold.cpp
  analysis/pass_tree.cpp
  analysis/path_names.cpp
  analysis/phase.cpp
  analysis/phase_fold.cpp
  analysis/process_analysis.cpp
  analysis/process_facts.cpp
  analysis/process_trace.cpp
  analysis/refusal_catalogue.cpp
  analysis/rule_file.cpp
  analysis/step_fold.cpp
  analysis/work_fold.cpp
  analysis/trace_builder.cpp
  report/atomic_write.cpp
  report/process_reader.cpp
  report/report_builder.cpp
  report/report_json.cpp
  report/json_text.cpp
  report/report_reader.cpp
  report/step_row_columns.cpp
  report/report_writer.cpp
  report/summary.cpp
  report/work_report.cpp
  ${GPUATTR_COLLECTOR_EMBEDDED}
)
target_include_directories(gpuattr_collector_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_include_directories(gpuattr_collector_core PRIVATE ${GPUATTR_COLLECTOR_GENERATED_DIR})
target_link_libraries(gpuattr_collector_core PUBLIC gpuattr_wire gpuattr_version
  nlohmann_json::nlohmann_json)
target_compile_options(gpuattr_collector_core PRIVATE ${GPUATTR_WARNINGS})

# gpuattr_collector_views: reports read back as text (views/): the terminal view (`gpuattr
# report`), the summary on stderr after a run, on one text toolkit; diff and gate print with it.
add_library(gpuattr_collector_views STATIC
  views/report_view.cpp
  views/run_summary.cpp
  views/text.cpp
)
target_link_libraries(gpuattr_collector_views PUBLIC gpuattr_collector_core)
target_compile_options(gpuattr_collector_views PRIVATE ${GPUATTR_WARNINGS})

# gpuattr_collector_gate: metric paths, gate rules, the Mann–Whitney U test and report diffs
# (gate/, docs/gate.md); pure functions on parsed reports, used by `gpuattr gate` and `diff`.
add_library(gpuattr_collector_gate STATIC
  gate/diff.cpp
  gate/gate.cpp
  gate/gate_outputs.cpp
  gate/metric_path.cpp
  gate/metric_path_syntax.cpp
  gate/rules.cpp
  gate/statistics.cpp
)
target_link_libraries(gpuattr_collector_gate PUBLIC gpuattr_collector_views)
target_compile_options(gpuattr_collector_gate PRIVATE ${GPUATTR_WARNINGS})
