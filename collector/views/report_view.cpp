// RenderReportView (report_view.h). Layout: sections of aligned tables whose numeric columns are
// as wide as their widest cell; the first (name) column takes what is left of kReportViewWidth.
#include "views/report_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kEllipsis = "…";
constexpr char kNa[] = "n/a";
constexpr size_t kMinNameWidth = 12;
constexpr size_t kMaxIndentLevels = 10;  // deeper pass-tree levels show their depth instead

// ---- Reading the document defensively ----

const Json& NullJson() {
  static const Json kNull;
  return kNull;
}

const Json& Field(const Json& object, const char* key) {
  if (!object.is_object()) return NullJson();
  auto it = object.find(key);
  return it == object.end() ? NullJson() : *it;
}

// The elements of `value` when it is an array, else none.
std::vector<const Json*> Elements(const Json& value) {
  std::vector<const Json*> out;
  if (!value.is_array()) return out;
  out.reserve(value.size());
  for (const Json& element : value) out.push_back(&element);
  return out;
}

std::optional<double> Number(const Json& value) {
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

// ---- Text ----

// Control characters (C0, DEL, C1) become '?': a report must not drive the terminal.
std::string Sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) {
      out += '?';
    } else if (byte == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += '?';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// Display width in code points.
size_t Width(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += IsContinuationByte(c) ? 0 : 1;
  return width;
}

// Byte offset of code point `n` (or the end).
size_t ByteOffset(std::string_view text, size_t n) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsContinuationByte(text[i])) continue;
    if (seen == n) return i;
    ++seen;
  }
  return text.size();
}

// `text` cut in the middle to `width` code points, with "…" where the middle was.
std::string ElideMiddle(const std::string& text, size_t width) {
  const size_t have = Width(text);
  if (have <= width) return text;
  if (width == 0) return "";
  const size_t keep = width - 1;
  const size_t head = (keep + 1) / 2;
  const size_t tail = keep - head;
  return text.substr(0, ByteOffset(text, head)) + std::string(kEllipsis) +
         text.substr(ByteOffset(text, have - tail));
}

// `head` (elided to leave room for a short tail) then `tail` elided to what is left, as one line.
std::string FitLine(const std::string& head, const std::string& tail) {
  const std::string fitted = ElideMiddle(head, kReportViewWidth - kMinNameWidth);
  return fitted + ElideMiddle(tail, kReportViewWidth - Width(fitted)) + "\n";
}

std::string Format(const char* format, double value) {
  char out[64];
  std::snprintf(out, sizeof(out), format, value);
  return out;
}

// A plain number with three decimals (a ratio).
std::string Fixed(const Json& value) {
  const std::optional<double> number = Number(value);
  return number ? Format("%.3f", *number) : kNa;
}

std::string Ms(const Json& ns) {
  const std::optional<double> value = Number(ns);
  return value ? Format("%.3f", *value / 1e6) : kNa;
}

std::string Us(const Json& ns) {
  const std::optional<double> value = Number(ns);
  return value ? Format("%.1f", *value / 1e3) : kNa;
}

std::string Percent(const Json& fraction) {
  const std::optional<double> value = Number(fraction);
  return value ? Format("%.2f%%", *value * 100.0) : kNa;
}

std::string Count(const Json& value) {
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  return kNa;
}

std::string Str(const Json& value) {
  if (value.is_string()) return Sanitize(value.get_ref<const std::string&>());
  return kNa;
}

std::string YesNo(const Json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return kNa;
}

std::string JoinPath(const Json& path) {
  if (!path.is_array()) return kNa;
  if (path.empty()) return "(no range)";
  std::string out;
  for (const Json& name : path) out += (out.empty() ? "" : "/") + Str(name);
  return out;
}

// `text` wrapped at spaces to kReportViewWidth: the first line after `first`, the others after
// `rest` (both prefixes count in the width). A word longer than a line is elided.
std::string Wrap(const std::string& text, const std::string& first, const std::string& rest) {
  std::string out;
  std::string line = first;
  bool line_empty = true;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) {
      std::string word = text.substr(pos, end - pos);
      if (!line_empty && Width(line) + 1 + Width(word) > kReportViewWidth) {
        out += line + "\n";
        line = rest;
        line_empty = true;
      }
      const size_t used = Width(line) + (line_empty ? 0 : 1);
      const size_t room = kReportViewWidth - std::min(kReportViewWidth - 1, used);
      if (Width(word) > room) word = ElideMiddle(word, room);
      line += (line_empty ? "" : " ") + word;
      line_empty = false;
    }
    pos = end + 1;
  }
  return out + line + "\n";
}

// Removes trailing spaces (rows end with padded empty cells).
std::string TrimRight(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// ---- Tables ----

struct Column {
  std::string header;
  bool left = false;  // left-aligned (names, classes); numbers are right-aligned
};

// Rows of cells under a header; column 0 is the name column: elided to the room the other
// columns leave (its leading spaces, the tree indentation, are kept). Notes are free lines
// ("… 3 more") between rows.
class Table {
 public:
  Table(std::string indent, std::vector<Column> columns)
      : indent_(std::move(indent)), columns_(std::move(columns)) {}

  void Add(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back({std::move(cells), {}});
  }
  void AddNote(std::string note) { rows_.push_back({{}, std::move(note)}); }

  std::string Render() const {
    std::vector<size_t> widths(columns_.size());
    for (size_t c = 0; c < columns_.size(); ++c) {
      widths[c] = Width(columns_[c].header);
      for (const Row& row : rows_) {
        if (!row.cells.empty()) widths[c] = std::max(widths[c], Width(row.cells[c]));
      }
    }
    size_t others = Width(indent_);
    for (size_t c = 1; c < columns_.size(); ++c) others += 2 + widths[c];
    const size_t room =
        others + kMinNameWidth < kReportViewWidth ? kReportViewWidth - others : kMinNameWidth;
    widths[0] = std::min(widths[0], room);

    std::string out = Line(Headers(), widths);
    for (const Row& row : rows_) {
      out += row.cells.empty() ? ElideMiddle(indent_ + row.note, kReportViewWidth) + "\n"
                               : Line(row.cells, widths);
    }
    return out;
  }

 private:
  struct Row {
    std::vector<std::string> cells;  // empty for a note
    std::string note;
  };

  std::vector<std::string> Headers() const {
    std::vector<std::string> headers;
    for (const Column& column : columns_) headers.push_back(column.header);
    return headers;
  }

  std::string Line(const std::vector<std::string>& cells, const std::vector<size_t>& widths) const {
    std::string line = indent_;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string cell = cells[c];
      if (c == 0) {
        const size_t spaces = cell.find_first_not_of(' ') == std::string::npos
                                  ? cell.size()
                                  : cell.find_first_not_of(' ');
        const size_t spaces_kept = std::min(spaces, widths[0]);
        cell = std::string(spaces_kept, ' ') +
               ElideMiddle(cell.substr(spaces), widths[0] - spaces_kept);
      }
      const std::string padding(widths[c] - std::min(widths[c], Width(cell)), ' ');
      if (c > 0) line += "  ";
      line += columns_[c].left ? cell + padding : padding + cell;
    }
    return TrimRight(line) + "\n";
  }

  std::string indent_;
  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

// ---- Sections ----

std::string Totals(const Json& totals) {
  if (!totals.is_object()) return "n/a";
  return "kernels " + Count(Field(totals, "kernels")) + " (" + Ms(Field(totals, "kernel_ns")) +
         " ms), memcpys " + Count(Field(totals, "memcpys")) + " (" +
         Ms(Field(totals, "memcpy_ns")) + " ms), memsets " + Count(Field(totals, "memsets")) +
         " (" + Ms(Field(totals, "memset_ns")) + " ms), launches " +
         Count(Field(totals, "launches"));
}

std::string CoverageLine(const Json& coverage) {
  std::string passed = kNa;
  const Json& value = Field(coverage, "passed");
  if (value.is_boolean()) passed = value.get<bool>() ? "passed" : "FAILED";
  return Percent(Field(coverage, "attributed_fraction")) +
         " of kernel time attributed (threshold " + Percent(Field(coverage, "threshold")) +
         "): " + passed;
}

// Counters of `object` that are numbers above zero, as "name N, name N"; empty when none.
std::string NonZeroCounters(const Json& object) {
  std::string out;
  if (!object.is_object()) return out;
  for (const auto& [name, value] : object.items()) {
    const std::optional<double> number = Number(value);
    if (number && *number > 0) {
      out += (out.empty() ? "" : ", ") + Sanitize(name) + " " +
             (value.is_number_integer() ? Count(value) : Format("%g", *number));
    }
  }
  return out;
}

double SelfNs(const Json& pass) {
  return Number(Field(Field(pass, "device"), "self_ns")).value_or(-1.0);
}

// The passes of `list`, self time descending; a pass without device time sorts last.
std::vector<const Json*> BySelfTime(const Json& list) {
  std::vector<const Json*> passes = Elements(list);
  std::stable_sort(passes.begin(), passes.end(),
                   [](const Json* a, const Json* b) { return SelfNs(*a) > SelfNs(*b); });
  return passes;
}

// "d60 i40": the share of self time by attribution rule, the non-zero ones; empty when none.
std::string Split(const Json& attribution) {
  const double direct = Number(Field(attribution, "direct_ns")).value_or(0);
  const double inherited = Number(Field(attribution, "inherited_ns")).value_or(0);
  const double captured = Number(Field(attribution, "captured_ns")).value_or(0);
  const double sum = direct + inherited + captured;
  if (!(sum > 0)) return "";
  std::string out;
  const std::pair<char, double> parts[] = {{'d', direct}, {'i', inherited}, {'c', captured}};
  for (const auto& [letter, ns] : parts) {
    if (ns > 0) {
      out += (out.empty() ? "" : " ") + std::string(1, letter) +
             Format("%.0f", std::round(ns / sum * 100.0));
    }
  }
  return out;
}

void AddPassRows(Table& table, const Json& list, size_t depth, const ReportViewOptions& options) {
  const std::vector<const Json*> passes = BySelfTime(list);
  const std::string indent(2 * std::min(depth, kMaxIndentLevels), ' ');
  if (depth >= kReportViewMaxDepth) {
    if (!passes.empty()) table.AddNote(indent + "… deeper levels not shown");
    return;
  }
  const size_t shown = std::min(passes.size(), options.top);
  for (size_t i = 0; i < shown; ++i) {
    const Json& pass = *passes[i];
    const Json& device = Field(pass, "device");
    std::string name = Str(Field(pass, "name"));
    if (depth > kMaxIndentLevels) name = "[" + std::to_string(depth) + "] " + name;
    table.Add({indent + name, Ms(Field(device, "self_ns")), Ms(Field(device, "total_ns")),
               Ms(Field(device, "busy_ns")), Count(Field(device, "kernels")),
               Count(Field(pass, "instances")), Ms(Field(Field(pass, "host_ns"), "total")),
               Str(Field(pass, "phase")), Split(Field(pass, "attribution"))});
    AddPassRows(table, Field(pass, "children"), depth + 1, options);
  }
  if (passes.size() > shown) {
    double self = 0;
    for (size_t i = shown; i < passes.size(); ++i) self += std::max(0.0, SelfNs(*passes[i]));
    table.AddNote(indent + "… " + std::to_string(passes.size() - shown) + " more (self " +
                  Format("%.3f", self / 1e6) + " ms)");
  }
}

std::string PassTree(const Json& process, const ReportViewOptions& options) {
  const Json& passes = Field(process, "passes");
  if (!passes.is_array()) return "  passes: n/a\n";
  if (passes.empty()) return "  passes: none (no NVTX range was seen)\n";
  std::string out =
      "  passes by self device time (ms; split: share of self time direct/inherited/captured)\n";
  Table table("  ", {{"pass", true},
                     {"self"},
                     {"total"},
                     {"busy"},
                     {"kernels"},
                     {"inst"},
                     {"host"},
                     {"phase", true},
                     {"split", true}});
  AddPassRows(table, passes, 0, options);
  return out + table.Render();
}

std::string Families(const Json& families, const ReportViewOptions& options) {
  if (!families.is_array()) return "  kernel families: n/a\n";
  if (families.empty()) return "  kernel families: none\n";
  std::vector<const Json*> rows = Elements(families);
  std::stable_sort(rows.begin(), rows.end(), [](const Json* a, const Json* b) {
    return Number(Field(*a, "total_ns")).value_or(-1) > Number(Field(*b, "total_ns")).value_or(-1);
  });
  const size_t shown = std::min(rows.size(), options.top);
  std::string out = "  kernel families by device time (ms; api, latency: launch medians)\n";
  Table table(
      "  ",
      {{"family", true}, {"kernels"}, {"total"}, {"share"}, {"mean"}, {"api µs"}, {"latency µs"}});
  for (size_t i = 0; i < shown; ++i) {
    const Json& family = *rows[i];
    const Json& launch = Field(family, "launch");
    table.Add({Str(Field(family, "family")), Count(Field(family, "kernels")),
               Ms(Field(family, "total_ns")), Percent(Field(family, "share")),
               Ms(Field(family, "mean_ns")), Us(Field(Field(launch, "api_ns"), "median")),
               Us(Field(Field(launch, "latency_ns"), "median"))});
  }
  if (rows.size() > shown) {
    double total = 0;
    for (size_t i = shown; i < rows.size(); ++i) {
      total += std::max(0.0, Number(Field(*rows[i], "total_ns")).value_or(0));
    }
    table.AddNote("… " + std::to_string(rows.size() - shown) + " more (" +
                  Format("%.3f", total / 1e6) + " ms)");
  }
  return out + table.Render();
}

std::string Devices(const Json& devices, const ReportViewOptions& options) {
  if (!devices.is_array()) return "  device time: not measured\n";
  if (devices.empty()) return "  devices: none\n";
  std::string out;
  for (const Json* device_ptr : Elements(devices)) {
    const Json& device = *device_ptr;
    out +=
        ElideMiddle("  device " + Count(Field(device, "id")) + " (" + Str(Field(device, "name")) +
                        "): span " + Ms(Field(device, "span_ns")) + " ms, busy " +
                        Ms(Field(device, "busy_ns")) + " ms, idle " + Ms(Field(device, "idle_ns")) +
                        " ms (" + Percent(Field(device, "idle_fraction")) + ")",
                    kReportViewWidth) +
        "\n";
    const Json& gaps = Field(device, "gaps");
    if (!gaps.is_object()) {
      out += "    gaps: n/a\n";
      continue;
    }
    out += "    gaps " + Count(Field(gaps, "count")) + ": host_bound " +
           Ms(Field(gaps, "host_bound_ns")) + " ms, dependency " +
           Ms(Field(gaps, "dependency_ns")) + " ms, unclassified " +
           Ms(Field(gaps, "unclassified_ns")) + " ms; tail " + Ms(Field(gaps, "tail_ns")) + " ms\n";
    const std::vector<const Json*> largest = Elements(Field(gaps, "largest"));
    if (largest.empty()) continue;
    const std::optional<double> first_start = Number(Field(device, "first_start_ns"));
    Table table("    ", {{"host range (largest gaps)", true}, {"ms"}, {"at ms"}, {"class", true}});
    const size_t shown = std::min(largest.size(), options.top);
    for (size_t i = 0; i < shown; ++i) {
      const Json& gap = *largest[i];
      const std::optional<double> start = Number(Field(gap, "start_ns"));
      table.Add({JoinPath(Field(gap, "host_range")), Ms(Field(gap, "ns")),
                 start && first_start ? Format("%.3f", (*start - *first_start) / 1e6) : kNa,
                 Str(Field(gap, "class"))});
    }
    if (largest.size() > shown) {
      table.AddNote("… " + std::to_string(largest.size() - shown) + " more");
    }
    out += table.Render();
  }
  return out;
}

std::string Phases(const Json& phases) {
  if (!phases.is_object()) return "  phases: n/a\n";
  Table table("  ", {{"phases (ms)", true},
                     {"forward"},
                     {"backward"},
                     {"recompute"},
                     {"optimizer"},
                     {"loss"},
                     {"other"},
                     {"r"}});
  table.Add({"", Ms(Field(phases, "forward_ns")), Ms(Field(phases, "backward_ns")),
             Ms(Field(phases, "recompute_ns")), Ms(Field(phases, "optimizer_ns")),
             Ms(Field(phases, "loss_ns")), Ms(Field(phases, "other_ns")),
             Fixed(Field(phases, "recompute_fraction"))});
  return table.Render();
}

std::vector<std::string> StepCells(std::string first, const Json& row) {
  return {std::move(first),
          Ms(Field(row, "host_ns")),
          Ms(Field(row, "forward_ns")),
          Ms(Field(row, "backward_ns")),
          Ms(Field(row, "recompute_ns")),
          Ms(Field(row, "loss_ns")),
          Ms(Field(row, "optimizer_ns")),
          Ms(Field(row, "other_ns")),
          Ms(Field(row, "unattributed_ns")),
          Ms(Field(row, "busy_ns")),
          Ms(Field(row, "gaps_ns"))};
}

std::string Steps(const Json& steps, const Json& reason, const ReportViewOptions& options) {
  if (!steps.is_object()) {
    return FitLine("  steps: n/a (", (reason.is_string() ? Str(reason) : "no step range") + ")");
  }
  const std::vector<const Json*> rows = Elements(Field(steps, "rows"));
  const Json& detected = Field(steps, "detected");
  std::string how;
  if (detected.is_boolean()) how = detected.get<bool>() ? " (auto-detected)" : " (--step)";
  std::string out =
      FitLine("  steps (ms): ", "range '" + Str(Field(steps, "range")) + "'" + how + ", " +
                                    Count(Field(steps, "instances")) + " instances, " +
                                    Count(Field(steps, "skipped")) + " skipped, " +
                                    std::to_string(rows.size()) + " rows");
  Table table("  ", {{"step", true},
                     {"host"},
                     {"F"},
                     {"B"},
                     {"rF"},
                     {"loss"},
                     {"opt"},
                     {"other"},
                     {"unattr"},
                     {"busy"},
                     {"gaps"}});
  const size_t shown = std::min(rows.size(), options.top);
  for (size_t i = 0; i < shown; ++i) {
    table.Add(StepCells(Count(Field(*rows[i], "index")), *rows[i]));
  }
  if (rows.size() > shown) table.AddNote("… " + std::to_string(rows.size() - shown) + " more");
  table.Add(StepCells("median", Field(steps, "summary")));
  return out + table.Render();
}

std::string Coverage(const Json& coverage) {
  if (!coverage.is_object()) return "  coverage: n/a\n";
  std::string out = "  coverage: " + CoverageLine(coverage) + "\n";
  const Json& by_phase = Field(coverage, "by_phase");
  if (by_phase.is_object()) {
    out += "    by phase:";
    bool first = true;
    for (const auto& [phase, fraction] : by_phase.items()) {
      out += (first ? " " : ", ") + Sanitize(phase) + " " + Percent(fraction);
      first = false;
    }
    out += "\n";
  } else {
    out += "    by phase: n/a\n";
  }
  const Json& unattributed = Field(coverage, "unattributed");
  if (!unattributed.is_array()) {
    out += "    unattributed: n/a\n";
  } else if (unattributed.empty()) {
    out += "    unattributed: none\n";
  } else {
    Table table("    ", {{"unattributed reason", true}, {"ms"}, {"activities"}});
    for (const Json* reason : Elements(unattributed)) {
      table.Add({Str(Field(*reason, "reason")), Ms(Field(*reason, "ns")),
                 Count(Field(*reason, "activities"))});
    }
    out += table.Render();
  }
  return out;
}

std::string Refusals(const Json& refusals) {
  std::string out;
  for (const Json* refusal : Elements(refusals)) {
    out += Wrap(Str(Field(*refusal, "cause")),
                "  refused (" + Str(Field(*refusal, "code")) + "): ", "    ");
    out += Wrap(Str(Field(*refusal, "remedy")), "    remedy: ", "    ");
  }
  return out;
}

std::string Process(const Json& process, const ReportViewOptions& options) {
  std::string out =
      FitLine("process " + Count(Field(process, "pid")) + "  rank " +
                  Count(Field(process, "rank")) + "  status " + Str(Field(process, "status")) +
                  "  exit " + Count(Field(process, "exit_status")) + "  exe ",
              Str(Field(process, "exe")));
  out += Refusals(Field(process, "refusals"));
  out += Wrap(Totals(Field(process, "totals")), "  totals: ", "    ");
  out += "\n" + PassTree(process, options);
  out += "\n" + Families(Field(process, "families"), options);
  out += "\n" + Devices(Field(process, "devices"), options);
  out += "\n" + Phases(Field(process, "phases"));
  out += Steps(Field(process, "steps"), Field(process, "steps_reason"), options);
  out += "\n" + Coverage(Field(process, "coverage"));
  const Json& loss = Field(process, "loss");
  if (!loss.is_object()) {
    out += "  loss: n/a\n";
  } else {
    const std::string counters = NonZeroCounters(loss);
    out += Wrap(counters.empty() ? "none" : counters, "  loss: ", "    ");
  }
  return out;
}

std::string Header(const Json& report) {
  std::string out = ElideMiddle("gpuattr report (" + Str(Field(report, "schema_version")) +
                                    ", written by " + Str(Field(Field(report, "tool"), "name")) +
                                    " " + Str(Field(Field(report, "tool"), "version")) + ")",
                                kReportViewWidth) +
                    "\n";
  const Json& capture = Field(report, "capture");
  std::string command;
  for (const Json* arg : Elements(Field(capture, "command"))) {
    command += (command.empty() ? "" : " ") + Str(*arg);
  }
  // An import has no command; its source names the format and the files read.
  const Json& source = Field(capture, "source");
  if (command.empty() && source.is_object()) {
    command = Str(Field(source, "format")) + ":";
    for (const Json* file : Elements(Field(source, "files"))) command += " " + Str(*file);
  }
  out += FitLine("capture " + Str(Field(capture, "mode")) + ": ",
                 command.empty() ? std::string(kNa) : command);
  out += ElideMiddle("  host " + Str(Field(capture, "host")) + ", started " +
                         Str(Field(capture, "started_at")) + ", duration " +
                         Ms(Field(capture, "duration_ns")) + " ms, inherit " +
                         YesNo(Field(capture, "inherit")),
                     kReportViewWidth) +
         "\n";
  const Json& summary = Field(report, "summary");
  const Json& statuses = Field(summary, "statuses");
  out += "processes " + Count(Field(summary, "processes")) + ": complete " +
         Count(Field(statuses, "complete")) + ", truncated " + Count(Field(statuses, "truncated")) +
         ", refused " + Count(Field(statuses, "refused")) + "\n";
  out += Wrap(Totals(Field(summary, "totals")), "  all: ", "    ");
  out += "  coverage: " + CoverageLine(Field(summary, "coverage")) + "\n";
  const std::vector<const Json*> ranks = Elements(Field(summary, "ranks"));
  if (ranks.size() > 1) {
    Table table(
        "  ", {{"rank", true}, {"pid"}, {"status", true}, {"busy ms"}, {"idle ms"}, {"coverage"}});
    for (const Json* rank : ranks) {
      table.Add({Count(Field(*rank, "rank")), Count(Field(*rank, "pid")),
                 Str(Field(*rank, "status")), Ms(Field(*rank, "busy_ns")),
                 Ms(Field(*rank, "idle_ns")), Percent(Field(*rank, "coverage"))});
    }
    out += table.Render();
  }
  const std::string diagnostics = NonZeroCounters(Field(report, "diagnostics"));
  if (!diagnostics.empty()) out += Wrap(diagnostics, "  collector diagnostics: ", "    ");
  return out;
}

bool Selected(const Json& process, const ReportViewOptions& options) {
  if (!options.pid) return true;
  const Json& pid = Field(process, "pid");
  if (pid.is_number_unsigned()) return pid.get<uint64_t>() == *options.pid;
  return pid.is_number_integer() && pid.get<int64_t>() >= 0 &&
         static_cast<uint64_t>(pid.get<int64_t>()) == *options.pid;
}

}  // namespace

std::string RenderReportView(const nlohmann::json& report, const ReportViewOptions& options) {
  ReportViewOptions effective = options;
  effective.top = std::max<size_t>(effective.top, 1);
  std::string out = Header(report);
  const Json& processes = Field(report, "processes");
  if (!processes.is_array()) return out + "\nprocesses: n/a\n";
  if (processes.empty()) {
    return out +
           "\nno traced process (a process that never initialises CUDA nor calls NVTX is not "
           "reported)\n";
  }
  for (const Json* process : Elements(processes)) {
    if (Selected(*process, effective)) out += "\n" + Process(*process, effective);
  }
  return out;
}

}  // namespace gpuattr::collector
