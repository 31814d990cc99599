#include "cli/merge_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "cli/cli.h"
#include "cli/output_names.h"
#include "gpuattr_version.h"
#include "report/process_reader.h"
#include "report/report_json.h"
#include "report/report_reader.h"
#include "report/report_writer.h"
#include "report/summary.h"
#include "views/run_summary.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

constexpr char kMergeFooter[] =
    R"(Merges the reports of one job's nodes or ranks (each written by its own gpuattr run or
import) into one report: every input's processes, each with its host, and the summary (ranks,
stragglers, coverage, families) recomputed over all of them by the code that builds a single
report's. Refused: the same process twice (host and pid), the same file twice, another schema,
different attribution settings, and captures of different modes or import formats unless
--allow-mixed-captures. Memory follows the largest input, not the sum (docs/jobs.md).

Exit status: 0; 3 when an input is missing, unreadable, of another schema or malformed; 2 usage
(inputs that cannot be one job, too); 4 when the output cannot be written (an existing name
without --force-overwrite, too).

Examples:
  gpuattr merge -o job.json node0.json node1.json
  gpuattr merge -o - reports/rank*.json | jq .summary.ranks)";

// What the first pass keeps of one input: its capture and the top-level members the merged
// report adds up; its processes are ProcessKeys.
struct InputFacts {
  std::string path;
  std::string mode;
  Json format;  // capture.source.format for imports, else null
  Json host;    // capture.host: a string or null
  Json command;
  Json source;
  Json started_at;  // the ISO string, or null
  std::optional<uint64_t> started_ns;
  uint64_t duration_ns = 0;
  Json clock;
  Json window;
  bool inherit = true;
  double threshold = 0;
  Json launchers = Json::array();  // each with its host
  uint64_t rejected_connections = 0;
  uint64_t rejected_messages = 0;
  uint64_t connections_without_hello = 0;
  Json advice = Json::array();
  size_t processes = 0;
};

// One process of one input, as the second pass visits it.
struct ProcessKey {
  size_t input = 0;
  size_t index = 0;  // in the input's processes
  Json host;         // the process's own host, else its input's capture.host
  uint32_t pid = 0;
  int64_t rank = -1;  // -1: no rank
  Json rank_row;      // its summary.ranks row, with host
};

Status Malformed(const std::string& path, const std::string& what) {
  return DataLossError(path + ": " + what + " (not a report gpuattr can merge)");
}

// The report's capture, summary threshold, launchers, diagnostics and advice, and a key per
// process (checked whole, so that nothing is written for an input the second pass would refuse).
StatusOr<InputFacts> ReadInput(const std::string& path, size_t input, const Json& report,
                               std::vector<ProcessKey>* keys) {
  InputFacts facts;
  facts.path = path;
  const Json& capture = Field(report, "capture");
  if (!Field(capture, "mode").is_string()) return Malformed(path, "capture.mode is not a string");
  facts.mode = Field(capture, "mode").get<std::string>();
  facts.host = Field(capture, "host");
  if (!facts.host.is_string() && !facts.host.is_null()) {
    return Malformed(path, "capture.host is neither a string nor null");
  }
  facts.command = Field(capture, "command");
  facts.source = Field(capture, "source");
  facts.format = Field(facts.source, "format");
  facts.started_at = Field(capture, "started_at");
  if (facts.started_at.is_string()) {
    facts.started_ns = ParseIsoUtc(facts.started_at.get<std::string>());
    if (!facts.started_ns) return Malformed(path, "capture.started_at is not an ISO-8601 UTC time");
  } else if (!facts.started_at.is_null()) {
    return Malformed(path, "capture.started_at is neither a string nor null");
  }
  if (!IsCount(Field(capture, "duration_ns"))) {
    return Malformed(path, "capture.duration_ns is not a count");
  }
  facts.duration_ns = Field(capture, "duration_ns").get<uint64_t>();
  facts.clock = Field(capture, "clock");
  facts.window = Field(capture, "window");
  if (!Field(capture, "inherit").is_boolean()) {
    return Malformed(path, "capture.inherit is not a boolean");
  }
  facts.inherit = Field(capture, "inherit").get<bool>();
  const Json& summary = Field(report, "summary");
  const Json& threshold = Field(Field(summary, "coverage"), "threshold");
  if (!threshold.is_number()) return Malformed(path, "summary.coverage.threshold is not a number");
  facts.threshold = threshold.get<double>();

  const Json& launchers = Field(report, "launchers");
  if (launchers.is_array()) {
    for (Json launcher : launchers) {
      const Json& children = Field(launcher, "children");
      if (!IsCount(Field(launcher, "pid")) || !Field(launcher, "exit_status").is_number_integer() ||
          !children.is_array() || !std::all_of(children.begin(), children.end(), IsCount)) {
        return Malformed(path, "a launcher is not {pid, exit_status, children}");
      }
      if (!Field(launcher, "host").is_string()) launcher["host"] = facts.host;
      facts.launchers.push_back(std::move(launcher));
    }
  }
  const Json& diagnostics = Field(report, "diagnostics");
  for (auto [name, into] :
       {std::pair{"rejected_connections", &facts.rejected_connections},
        std::pair{"rejected_messages", &facts.rejected_messages},
        std::pair{"connections_without_hello", &facts.connections_without_hello}}) {
    const Json& value = Field(diagnostics, name);
    if (IsCount(value)) *into = value.get<uint64_t>();
  }
  if (Field(report, "advice").is_array()) facts.advice = Field(report, "advice");

  const Json& processes = Field(report, "processes");
  const Json& ranks = Field(summary, "ranks");
  if (!processes.is_array()) return Malformed(path, "processes is not an array");
  if (!ranks.is_array() || ranks.size() != processes.size()) {
    return Malformed(path, "summary.ranks does not have one row per process");
  }
  facts.processes = processes.size();
  for (size_t i = 0; i < processes.size(); ++i) {
    const Json& process = processes[i];
    const std::string where = path + ": processes[" + std::to_string(i) + "]";
    GPUATTR_RETURN_IF_ERROR(SummaryTermsOf(process, where).status());
    const Json& pid = Field(process, "pid");
    if (!IsCount(pid) || pid.get<uint64_t>() > UINT32_MAX) {
      return Malformed(where, "pid is not a process id");
    }
    if (Field(ranks[i], "pid") != pid) {
      return Malformed(where, "its summary.ranks row is another process's");
    }
    const Json& rank = Field(process, "rank");
    if (!rank.is_null() && (!IsCount(rank) || rank.get<uint64_t>() > INT32_MAX)) {
      return Malformed(where, "rank is neither a rank nor null");
    }
    ProcessKey key;
    key.input = input;
    key.index = i;
    key.host = Field(process, "host").is_string() ? Field(process, "host") : facts.host;
    key.pid = pid.get<uint32_t>();
    key.rank = rank.is_null() ? -1 : rank.get<int64_t>();
    key.rank_row = ranks[i];
    key.rank_row["host"] = key.host;
    keys->push_back(std::move(key));
  }
  return facts;
}

// The same process twice: the same host and pid, or, where the host is not known (imports),
// the same pid and rank.
Status RefuseDuplicateProcesses(const std::vector<ProcessKey>& keys,
                                const std::vector<InputFacts>& inputs) {
  std::map<std::tuple<bool, std::string, uint32_t, int64_t>, const ProcessKey*> seen;
  for (const ProcessKey& key : keys) {
    const bool host_known = key.host.is_string();
    const auto identity = std::make_tuple(host_known, host_known ? key.host.get<std::string>() : "",
                                          key.pid, host_known ? int64_t{-2} : key.rank);
    auto [earlier, inserted] = seen.try_emplace(identity, &key);
    if (inserted) continue;
    const std::string who =
        host_known ? "pid " + std::to_string(key.pid) + " on " + key.host.get<std::string>()
                   : "pid " + std::to_string(key.pid) + " of rank " +
                         (key.rank < 0 ? std::string("none") : std::to_string(key.rank)) +
                         " (no host known)";
    return InvalidArgumentError(who + " is in " + inputs[earlier->second->input].path + " and in " +
                                inputs[key.input].path +
                                ": one process captured twice (overlapping captures, or one "
                                "report given twice); give each process's report once");
  }
  return Status::Ok();
}

// A capture's kind for the mixed-captures rule: its mode, and an import's format.
std::string CaptureKind(const InputFacts& input) {
  return input.format.is_string() ? input.mode + " (" + input.format.get<std::string>() + ")"
                                  : input.mode;
}

// The refusals of inputs that each read fine but cannot be one job's.
Status RefuseIncompatible(const std::vector<InputFacts>& inputs, const MergeOptions& options) {
  const InputFacts& first = inputs.front();
  for (const InputFacts& input : inputs) {
    if (input.inherit != first.inherit) {
      return InvalidArgumentError(
          input.path + " attributed with inherit " + (input.inherit ? "on" : "off") + " and " +
          first.path + " with it " + (first.inherit ? "on" : "off") +
          ": their pass times do not add up; capture every node with the same --no-inherit "
          "setting");
    }
    if (!options.coverage_threshold && input.threshold != first.threshold) {
      return InvalidArgumentError(input.path + " and " + first.path +
                                  " judge coverage against different thresholds; give the job's "
                                  "with --coverage-threshold");
    }
    if (!options.allow_mixed_captures && CaptureKind(input) != CaptureKind(first)) {
      return InvalidArgumentError(input.path + " is a capture of " + CaptureKind(input) + " and " +
                                  first.path + " of " + CaptureKind(first) +
                                  ": a job's reports come from one kind of capture; "
                                  "--allow-mixed-captures merges them anyway");
    }
  }
  return Status::Ok();
}

// `value` of every input when they all agree, else `otherwise`.
template <typename Get>
Json Common(const std::vector<InputFacts>& inputs, const Get& get, Json otherwise) {
  for (const InputFacts& input : inputs) {
    if (get(input) != get(inputs.front())) return otherwise;
  }
  return get(inputs.front());
}

// Adds each count of the object `counts` to the member of `sum` with its key (anything that is
// not a count adds nothing).
void AddCountsByKey(const Json& counts, Json& sum) {
  for (auto count = counts.begin(); counts.is_object() && count != counts.end(); ++count) {
    if (IsCount(count.value())) {
      sum[count.key()] = sum.value(count.key(), uint64_t{0}) + count->get<uint64_t>();
    }
  }
}

// capture.source of merged imports of one format: the files in input order, unused events and
// PyTorch counts summed; null for live captures and for mixed formats.
Json MergedSource(const std::vector<InputFacts>& inputs) {
  const Json format = Common(
      inputs, [](const InputFacts& input) { return input.format; }, nullptr);
  if (!format.is_string()) return nullptr;
  Json files = Json::array();
  Json unused = Json::object();
  Json pytorch = nullptr;
  for (const InputFacts& input : inputs) {
    const Json& input_files = Field(input.source, "files");
    for (size_t i = 0; input_files.is_array() && i < input_files.size(); ++i) {
      if (input_files[i].is_string()) files.push_back(input_files[i]);
    }
    AddCountsByKey(Field(input.source, "unused_events"), unused);
    const Json& counts = Field(input.source, "pytorch");
    if (!counts.is_object()) continue;
    if (pytorch.is_null()) pytorch = Json::object();
    AddCountsByKey(counts, pytorch);
  }
  return {{"format", format}, {"files", files}, {"unused_events", unused}, {"pytorch", pytorch}};
}

// The merged report's capture: what the inputs agree on, the earliest start, the span from it to
// the latest end (the longest input's duration when a start is not known), and each input.
Json MergedCapture(const std::vector<InputFacts>& inputs) {
  Json merged_from = Json::array();
  uint64_t earliest = std::numeric_limits<uint64_t>::max();
  uint64_t latest_end = 0;
  uint64_t longest = 0;
  bool every_start_known = true;
  Json started_at = nullptr;
  for (const InputFacts& input : inputs) {
    merged_from.push_back({{"file", input.path},
                           {"mode", input.mode},
                           {"host", input.host},
                           {"started_at", input.started_at},
                           {"duration_ns", input.duration_ns},
                           {"processes", input.processes}});
    longest = std::max(longest, input.duration_ns);
    if (!input.started_ns) {
      every_start_known = false;
      continue;
    }
    if (*input.started_ns < earliest) {
      earliest = *input.started_ns;
      started_at = input.started_at;
    }
    latest_end = std::max(latest_end, *input.started_ns + input.duration_ns);
  }
  auto common = [&](auto get, Json otherwise) { return Common(inputs, get, std::move(otherwise)); };
  return {{"mode", common([](const InputFacts& input) { return Json(input.mode); }, "mixed")},
          {"command", common([](const InputFacts& input) { return input.command; }, Json::array())},
          {"source", MergedSource(inputs)},
          {"host", common([](const InputFacts& input) { return input.host; }, nullptr)},
          {"started_at", started_at},
          {"duration_ns", every_start_known ? latest_end - earliest : longest},
          {"clock", common([](const InputFacts& input) { return input.clock; }, nullptr)},
          {"inherit", inputs.front().inherit},
          {"window", common([](const InputFacts& input) { return input.window; }, nullptr)},
          {"merged_from", std::move(merged_from)}};
}

// The members of the merged report that sort before "processes".
Json ReportHead(const std::vector<InputFacts>& inputs) {
  Json launchers = Json::array();
  uint64_t rejected_connections = 0;
  uint64_t rejected_messages = 0;
  uint64_t without_hello = 0;
  // Advice no_ranges holds when no process of any input has a range: when every input has it.
  bool no_ranges_anywhere = true;
  for (const InputFacts& input : inputs) {
    for (const Json& launcher : input.launchers) launchers.push_back(launcher);
    rejected_connections += input.rejected_connections;
    rejected_messages += input.rejected_messages;
    without_hello += input.connections_without_hello;
    no_ranges_anywhere = no_ranges_anywhere && !input.advice.empty();
  }
  std::stable_sort(launchers.begin(), launchers.end(), [](const Json& a, const Json& b) {
    return std::make_tuple(Field(a, "host"), Field(a, "pid")) <
           std::make_tuple(Field(b, "host"), Field(b, "pid"));
  });
  return {{"advice", no_ranges_anywhere ? inputs.front().advice : Json::array()},
          {"capture", MergedCapture(inputs)},
          {"diagnostics",
           {{"rejected_connections", rejected_connections},
            {"rejected_messages", rejected_messages},
            {"connections_without_hello", without_hello}}},
          {"launchers", std::move(launchers)}};
}

// Report order: by rank (none last), then host (unknown first), then pid.
void SortToReportOrder(std::vector<ProcessKey>& keys) {
  std::stable_sort(keys.begin(), keys.end(), [](const ProcessKey& a, const ProcessKey& b) {
    const int64_t rank_a = a.rank >= 0 ? a.rank : INT64_MAX;
    const int64_t rank_b = b.rank >= 0 ? b.rank : INT64_MAX;
    return std::tie(rank_a, a.host, a.pid) < std::tie(rank_b, b.host, b.pid);
  });
}

}  // namespace

StatusOr<MergeResult> MergeReports(const MergeOptions& requested) {
  MergeOptions options = requested;
  if (options.inputs.empty()) return InvalidArgumentError("no input: gpuattr merge REPORT...");
  ExportPaths no_exports;
  GPUATTR_ASSIGN_OR_RETURN(
      const ExistingFile existing,
      ResolveOutputNames(&options.output, &no_exports, options.force_overwrite,
                         /*report_to_stdout=*/true, ProcessOutputNameContext()));
  GPUATTR_RETURN_IF_ERROR(
      RefuseRepeatedFiles(options.inputs, "each report holds its processes once"));

  std::vector<InputFacts> inputs;
  std::vector<ProcessKey> keys;
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    GPUATTR_ASSIGN_OR_RETURN(const LoadedReport report, LoadReport(options.inputs[i]));
    GPUATTR_ASSIGN_OR_RETURN(InputFacts facts,
                             ReadInput(options.inputs[i], i, report.document(), &keys));
    inputs.push_back(std::move(facts));
  }
  GPUATTR_RETURN_IF_ERROR(RefuseIncompatible(inputs, options));
  GPUATTR_RETURN_IF_ERROR(RefuseDuplicateProcesses(keys, inputs));
  SortToReportOrder(keys);

  MergeResult result;
  result.output = options.output;
  result.inputs = inputs.size();
  result.processes = keys.size();
  std::set<std::string> hosts;
  for (const ProcessKey& key : keys) {
    if (key.host.is_string()) hosts.insert(key.host.get<std::string>());
  }
  result.hosts = hosts.size();

  GPUATTR_ASSIGN_OR_RETURN(std::unique_ptr<StreamedReport> stream,
                           StreamedReport::Open(options.output, existing));
  const Json head = ReportHead(inputs);
  stream->Begin(head);
  SummaryBuilder summary;
  // The input whose processes are being visited, its step rows in columns: each process is
  // written with its rows taken from them one at a time, never as one DOM.
  std::optional<LoadedReport> loaded;
  size_t loaded_input = SIZE_MAX;
  for (ProcessKey& key : keys) {
    const InputFacts& input = inputs[key.input];
    if (key.input != loaded_input) {
      loaded.reset();
      GPUATTR_ASSIGN_OR_RETURN(LoadedReport read, LoadReport(input.path));
      loaded = std::move(read);
      loaded_input = key.input;
      const Json& processes = Field(loaded->document(), "processes");
      if (!processes.is_array() || processes.size() != input.processes) {
        return DataLossError(input.path + " changed while it was being merged");
      }
    }
    Json process = loaded->document()["processes"][key.index];  // without its rows: small
    const std::string where = input.path + ": processes[" + std::to_string(key.index) + "]";
    if (Field(process, "pid") != Json(key.pid)) {
      return DataLossError(input.path + " changed while it was being merged");
    }
    process["host"] = key.host;
    GPUATTR_ASSIGN_OR_RETURN(const ProcessAnalysis analysis, SummaryTermsOf(process, where));
    summary.Add(analysis, std::move(key.rank_row));
    stream->AddProcess(process, LoadedStepRows(*loaded, key.index));
  }
  double threshold = options.coverage_threshold.value_or(inputs.front().threshold);
  Json tail = {{"schema_version", kReportSchemaVersion},
               {"summary", std::move(summary).Finish(threshold)},
               {"tool", {{"name", "gpuattr"}, {"version", GPUATTR_VERSION}}}};
  result.rank_table =
      RenderRankTable({{"summary", tail["summary"]}, {"launchers", head["launchers"]}});
  GPUATTR_RETURN_IF_ERROR(stream->Finish(tail));
  return result;
}

Subcommand AddMergeSubcommand(CLI::App& app) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* merge =
      app.add_subcommand("merge", "Merge the reports of one job's nodes into one report");
  merge->add_option("inputs", options->inputs, "REPORT...: the nodes' (or ranks') reports")
      ->required();
  merge
      ->add_option("-o,--output", options->output,
                   "Where to write the merged report (- for stdout; %p %h %q{VAR} %n expand)")
      ->capture_default_str();
  merge->add_flag("--force-overwrite", options->force_overwrite,
                  "Replace an output that exists (otherwise an existing name is refused)");
  merge->add_flag("--allow-mixed-captures", options->allow_mixed_captures,
                  "Merge captures of different modes or import formats (capture.mode \"mixed\")");
  merge
      ->add_option("--coverage-threshold", options->coverage_threshold,
                   "Judge the job's coverage against this (default: the inputs' own)")
      ->check(CLI::Range(0.0, 1.0));
  merge->add_flag("-q,--quiet", options->quiet, "No summary on stderr");
  merge->footer(kMergeFooter);
  return {merge, [options] {
            StatusOr<MergeResult> result = MergeReports(*options);
            if (!result.ok()) {
              std::fprintf(stderr, "gpuattr merge: %s\n", result.status().message().c_str());
              return ExitCodeFor(result.status());
            }
            if (!options->quiet) {
              const std::string hosts = result->hosts == 0
                                            ? std::string("hosts not known")
                                            : "on " + std::to_string(result->hosts) + " hosts";
              std::fprintf(stderr, "gpuattr merge: %zu processes from %zu reports, %s\n",
                           result->processes, result->inputs, hosts.c_str());
              std::fputs(result->rank_table.c_str(), stderr);
              if (result->output != "-") {
                std::fprintf(stderr, "gpuattr: report written to %s\n", result->output.c_str());
              }
            }
            return 0;
          }};
}

}  // namespace gpuattr::collector
