#include "cli/import_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "analysis/kernel_maps.h"
#include "analysis/process_analysis.h"
#include "analysis/process_facts.h"
#include "analysis/refusal_catalogue.h"
#include "cli/analysis_flags.h"
#include "cli/cli.h"
#include "cli/output_names.h"
#include "gpuattr_version.h"
#include "import/compiled_graph_calls.h"
#include "import/kineto_importer.h"
#include "import/nsys_importer.h"
#include "import/trace_replay.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "views/run_summary.h"

namespace gpuattr::collector {
namespace {

constexpr char kImportFooter[] =
    R"(Reads traces other tools recorded and writes the report `gpuattr run` writes
(capture.mode "import"): PyTorch profiler / Kineto chrome-trace JSON (.json, .json.gz; the
current and the 2021 schema, and the legacy autograd profiler's list, which has host ranges only)
and Nsight Systems SQLite exports (nsys export --type sqlite). Several files (one per rank) make
one multi-process report; a file given twice is refused. Ranges are the user annotations and
ProfilerStep ranges of each thread (Kineto), or the NVTX ranges (nsys); --ranges ops adds
Kineto's cpu_op ranges. A torch.compile'd graph's call (`## Call CompiledFxGraph KEY ##`) is a
range; with --kernel-maps (gpuattr run --kernel-maps of the same program) its launches are
placed by module, phase and recompute as in the live run (a graph the maps do not name by its
key, by its kernels). Device work whose launch the file does not hold is unattributed
(launch_not_seen), never dropped. A file without device work gets null device time and a
refusal; events of kinds not used are counted in capture.source.unused_events.

Exit status: 0; 3 when an input is missing, unreadable, truncated, not a trace, or holds no
event gpuattr can use; 2 usage (a file given twice, too); 4 when an output cannot be written
(an existing name without --force-overwrite, too).

Examples:
  gpuattr import -o report.json trace.json.gz
  gpuattr import --ranges ops -o report.json rank0.json.gz rank1.json.gz
  gpuattr import -o report.json profile.sqlite
  gpuattr import --kernel-maps maps.jsonl -o report.json compiled_trace.json)";

}  // namespace
namespace {

// "nsys" when the file starts with SQLite's magic, else "kineto" (JSON, plain or gzip).
StatusOr<std::string> DetectFormat(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return DataLossError("cannot open " + path + ": " + std::strerror(errno));
  }
  char magic[16] = {};
  const size_t got = std::fread(magic, 1, sizeof(magic), file);
  std::fclose(file);
  if (got == sizeof(magic) && std::memcmp(magic, "SQLite format 3", 16) == 0)
    return std::string("nsys");
  return std::string("kineto");
}

// A file none of whose events is a range, a launch or device work.
Status NothingUsableError(const ImportedTrace& trace) {
  std::string categories;
  for (const auto& [category, count] : trace.unused_events) {
    categories += (categories.empty() ? "" : ", ") + category + " " + std::to_string(count);
  }
  return DataLossError(trace.path + ": no event gpuattr can use (no device work, runtime call or " +
                       "range; " +
                       (categories.empty() ? "no events" : "unused events: " + categories) + ")");
}

// Why a file's processes have no device time: the legacy list never has any; any other file
// that holds no device activity was recorded without it. Null when the file has device work.
const RefusalEntry* DeviceRefusalOf(const ImportedTrace& trace) {
  if (!trace.activities.empty()) return nullptr;
  return trace.format == "autograd_legacy" ? &LegacyProfilerTraceRefusal()
                                           : &NoDeviceActivityInTraceRefusal();
}

void AddCounts(const PyTorchCounts& counts, PyTorchCounts* sum) {
  sum->module_ranges += counts.module_ranges;
  sum->recompute_frames += counts.recompute_frames;
  sum->backward_ops += counts.backward_ops;
  sum->linked_by_flow += counts.linked_by_flow;
  sum->linked_by_sequence += counts.linked_by_sequence;
  sum->unlinked += counts.unlinked;
}

nlohmann::json PyTorchJson(const PyTorchCounts& counts) {
  return {{"module_ranges", counts.module_ranges},
          {"recompute_frames", counts.recompute_frames},
          {"backward_ops", counts.backward_ops},
          {"linked_by_flow", counts.linked_by_flow},
          {"linked_by_sequence", counts.linked_by_sequence},
          {"unlinked", counts.unlinked}};
}

// The report's DOM (hundreds of thousands of nodes for a trace with module trees) is left to the
// process's exit instead of being freed node by node, which took 4 % of importing a 200 MB trace:
// RunImport is the process's last work. Held from a static, so leak checkers see it reachable.
void KeepUntilExit(Report report) {
  static auto* const kKeptReports = new std::vector<Report>();
  kKeptReports->push_back(std::move(report));
}

}  // namespace

StatusOr<ImportResult> BuildImportReport(const ImportOptions& options,
                                         std::shared_ptr<TraceObserver> observer) {
  if (options.files.empty()) return InvalidArgumentError("no input file: gpuattr import FILE...");
  if (options.format != "auto" && options.format != "kineto" && options.format != "nsys") {
    return InvalidArgumentError("--format must be auto, kineto or nsys");
  }
  if (options.ranges != "annotations" && options.ranges != "ops") {
    return InvalidArgumentError("--ranges must be annotations or ops");
  }
  AnalysisOptions analysis = options.analysis;
  GPUATTR_RETURN_IF_ERROR(
      LoadRuleFiles(options.phase_rules_path, options.family_rules_path, &analysis));
  analysis.observer = std::move(observer);

  GPUATTR_RETURN_IF_ERROR(
      RefuseRepeatedFiles(options.files, "each input is one process (one rank)"));
  // --kernel-maps: read here too, to match the graph calls they do not name by their kernels.
  KernelMaps maps;
  if (!analysis.kernel_maps.empty()) {
    if (!std::ifstream(analysis.kernel_maps)) {
      return DataLossError("cannot open the kernel maps " + analysis.kernel_maps + ": " +
                           std::strerror(errno));
    }
    if (Status read = maps.ReadNewLines(analysis.kernel_maps); !read.ok()) {
      return DataLossError(read.message());
    }
  }

  ImportResult result;
  // Each process with the refusal of its file when the file measured no device time.
  std::vector<std::pair<std::unique_ptr<ProcessTrace>, const RefusalEntry*>> traces;
  std::string source_format;
  std::map<std::string, uint64_t> unused_events;
  std::optional<PyTorchCounts> pytorch;  // summed over the Kineto files
  bool all_wall_clock = true;            // every file's times are Kineto epoch (wall) times
  uint64_t started = std::numeric_limits<uint64_t>::max();  // the earliest file's start
  ReplayStats stats;
  for (const std::string& path : options.files) {
    std::string format = options.format;
    if (format == "auto") {
      GPUATTR_ASSIGN_OR_RETURN(format, DetectFormat(path));
    }
    uint64_t json_bytes = 0;
    StatusOr<ImportedTrace> imported =
        format == "nsys"
            ? ImportNsysFile(path)
            : ImportKinetoFile(path, KinetoOptions{options.ranges == "ops", options.modules},
                               &json_bytes);
    if (!imported.ok()) return imported.status();
    if (imported->empty()) return NothingUsableError(*imported);
    if (source_format.empty()) {
      source_format = imported->format;
    } else if (source_format != imported->format) {
      return InvalidArgumentError("all inputs of one import must have the same format (" + path +
                                  " is " + imported->format + ", an earlier one " + source_format +
                                  ")");
    }
    result.json_bytes += json_bytes;
    all_wall_clock = all_wall_clock && imported->wall_clock && imported->format != "nsys";
    if (imported->started_realtime_ns) started = std::min(started, *imported->started_realtime_ns);
    result.skipped_events += imported->skipped_events;
    for (const auto& [category, count] : imported->unused_events) unused_events[category] += count;
    if (imported->pytorch) {
      if (!pytorch) pytorch.emplace();
      AddCounts(*imported->pytorch, &*pytorch);
    }
    const RefusalEntry* refusal = DeviceRefusalOf(*imported);
    AnalysisOptions file_analysis = analysis;
    if (!analysis.kernel_maps.empty()) {
      file_analysis.kernel_map_names = MatchCompiledGraphCalls(*imported, maps);
    }
    GPUATTR_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ProcessTrace>> processes,
                             ReplayTrace(*imported, file_analysis, &stats));
    for (auto& process : processes) traces.emplace_back(std::move(process), refusal);
  }
  result.clipped_ranges = stats.clipped_ranges;

  ReportInputs inputs;
  inputs.capture.mode = "import";
  // Host and clock as the traces know them: no Kineto or Nsight file names its host; Kineto's
  // epoch timestamps are wall time, other clocks are not named (docs/attribution.md §Imported
  // traces).
  inputs.capture.host = std::nullopt;
  inputs.capture.clock =
      all_wall_clock ? std::optional<std::string>("CLOCK_REALTIME") : std::nullopt;
  inputs.capture.source = {{"format", source_format},
                           {"files", options.files},
                           {"unused_events", unused_events},
                           {"pytorch", pytorch ? PyTorchJson(*pytorch) : nlohmann::json()}};
  for (const auto& [trace, refusal] : traces) {
    ProcessAnalysis process = trace->TakeAnalysis();
    if (!process.process) continue;
    if (refusal != nullptr) AddOutsideRefusal(*refusal, "", process);
    const ProcessIdentity& identity = *process.process;
    inputs.capture.duration_ns =
        std::max(inputs.capture.duration_ns, process.capture_end_ns - identity.monotonic_ns);
    inputs.processes.push_back(std::move(process));
  }
  if (started != std::numeric_limits<uint64_t>::max()) {
    inputs.capture.started_at_realtime_ns = started;
  }
  inputs.coverage_threshold = analysis.coverage_threshold;
  inputs.inherit = analysis.inherit;
  result.report = BuildReport(inputs);
  return result;
}

StatusOr<ImportResult> WriteImport(const ImportOptions& requested, bool write_report) {
  ImportOptions options = requested;
  GPUATTR_ASSIGN_OR_RETURN(
      const ExistingFile existing,
      ResolveOutputNames(write_report ? &options.output : nullptr, &options.exports,
                         options.force_overwrite, /*report_to_stdout=*/true,
                         ProcessOutputNameContext()));
  std::shared_ptr<Exports> exports;
  if (options.exports.any()) {
    GPUATTR_ASSIGN_OR_RETURN(exports, Exports::Create(options.exports, "gpuattr " GPUATTR_VERSION));
  }
  GPUATTR_ASSIGN_OR_RETURN(ImportResult result, BuildImportReport(options, exports));
  if (write_report) {
    GPUATTR_RETURN_IF_ERROR(WriteReport(result.report, options.output, existing));
    result.output = options.output;
  }
  if (exports) GPUATTR_RETURN_IF_ERROR(exports->Commit());
  return result;
}

Status RunImport(const ImportOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(ImportResult result, WriteImport(options, /*write_report=*/true));
  if (!options.quiet) {
    std::fputs(RenderSummary(result.report.without_step_rows).c_str(), stderr);
    if (result.skipped_events > 0 || result.clipped_ranges > 0) {
      std::fprintf(stderr,
                   "gpuattr import: %llu events skipped (fields of the wrong type), %llu ranges "
                   "clipped to nest\n",
                   static_cast<unsigned long long>(result.skipped_events),
                   static_cast<unsigned long long>(result.clipped_ranges));
    }
    if (result.output != "-") {
      std::fprintf(stderr, "gpuattr: report written to %s\n", result.output.c_str());
    }
  }
  KeepUntilExit(std::move(result.report));
  return Status::Ok();
}

void AddTraceReadingFlags(CLI::App* command, ImportOptions& options) {
  command->add_option("--format", options.format, "auto, kineto or nsys")
      ->check(CLI::IsMember({"auto", "kineto", "nsys"}))
      ->capture_default_str();
  command
      ->add_option("--ranges", options.ranges,
                   "annotations (user annotations and ProfilerStep) or ops (cpu_op too)")
      ->check(CLI::IsMember({"annotations", "ops"}))
      ->capture_default_str();
  command->add_flag("!--no-modules", options.modules,
                    "Kineto: no module tree (`nn.Module: …` events are not ranges, so backward is "
                    "not split by module)");
  command->add_option("--kernel-maps", options.analysis.kernel_maps,
                      "Kineto: the kernel maps a live run of the same compiled program kept "
                      "(gpuattr run --kernel-maps): its graphs' launches placed by module");
}

Subcommand AddImportSubcommand(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* import = app.add_subcommand(
      "import", "Write a report from PyTorch profiler (Kineto) JSON or Nsight Systems SQLite");
  import->add_option("files", options->files, "FILE...: traces, one per rank")->required();
  import
      ->add_option("-o,--output", options->output,
                   "Where to write the JSON report (- for stdout; %p %h %q{VAR} %n expand)")
      ->capture_default_str();
  AddTraceReadingFlags(import, *options);
  AddAnalysisFlags(import,
                   {&options->analysis, &options->phase_rules_path, &options->family_rules_path});
  import->add_option("--activities", options->exports.activities,
                     "Also write one JSON line per device activity to this file");
  import->add_flag("-q,--quiet", options->quiet, "No summary on stderr");
  import->add_flag("--force-overwrite", options->force_overwrite,
                   "Replace outputs that exist (otherwise an existing name is refused)");
  import->footer(kImportFooter);
  return {import, [options] {
            const Status status = RunImport(*options);
            if (status.ok()) return 0;
            std::fprintf(stderr, "gpuattr import: %s\n", status.message().c_str());
            return ExitCodeFor(status);
          }};
}

}  // namespace gpuattr::collector
