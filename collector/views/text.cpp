// The text toolkit (text.h).
#include "views/text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "analysis/module_fold.h"
#include "report/report_reader.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kEllipsis = "…";
constexpr size_t kMinNameWidth = 12;

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

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

}  // namespace

std::optional<double> NumberOf(const Json& value) {
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

std::string Formatted(const char* format, double value) {
  char out[64];
  std::snprintf(out, sizeof(out), format, value);
  return out;
}

std::string MsText(const Json& ns) {
  const std::optional<double> value = NumberOf(ns);
  return value ? Formatted("%.3f", *value / 1e6) : kNotMeasured;
}

std::string CountText(const Json& value) {
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  return kNotMeasured;
}

std::string SiText(const nlohmann::json& value, const char* unit) {
  const std::optional<double> number = NumberOf(value);
  if (!number) return kNotMeasured;
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  double scaled = *number;
  size_t prefix = 0;
  while (std::fabs(scaled) >= 1000.0 && prefix + 1 < std::size(kPrefixes)) {
    scaled /= 1000.0;
    ++prefix;
  }
  return Formatted("%.4g ", scaled) + kPrefixes[prefix] + unit;
}

std::string StringText(const Json& value) {
  if (value.is_string()) return SanitizedText(value.get_ref<const std::string&>());
  return kNotMeasured;
}

std::string YesNoText(const Json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return kNotMeasured;
}

std::string PathText(const Json& path) {
  if (!path.is_array()) return kNotMeasured;
  if (path.empty()) return "(no range)";
  std::string out;
  for (const Json& name : path) out += (out.empty() ? "" : "/") + StringText(name);
  return out;
}

std::string ReadableName(std::string_view name, std::string_view parent_module) {
  if (!name.starts_with(kModuleRangePrefix)) return std::string(name);
  name.remove_prefix(kModuleRangePrefix.size());
  if (parent_module.starts_with(kModuleRangePrefix)) {
    parent_module.remove_prefix(kModuleRangePrefix.size());
    if (!parent_module.empty() && name.size() > parent_module.size() + 1 &&
        name.starts_with(parent_module) && name[parent_module.size()] == '.') {
      name.remove_prefix(parent_module.size() + 1);
    }
  }
  return std::string(name);
}

std::string ReadablePathText(const Json& path) {
  if (!path.is_array()) return kNotMeasured;
  if (path.empty()) return "(no range)";
  std::string out;
  std::string parent_module;
  for (const Json& element : path) {
    const std::string name = StringText(element);
    out += (out.empty() ? "" : "/") + ReadableName(name, parent_module);
    if (name.starts_with(kModuleRangePrefix)) parent_module = name;
  }
  return out;
}

std::vector<const Json*> ElementsOf(const Json& value) {
  std::vector<const Json*> out;
  if (!value.is_array()) return out;
  out.reserve(value.size());
  for (const Json& element : value) out.push_back(&element);
  return out;
}

std::string SanitizedText(std::string_view text) {
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

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += IsContinuationByte(c) ? 0 : 1;
  return width;
}

std::string ElideMiddle(const std::string& text, size_t width) {
  const size_t have = DisplayWidth(text);
  if (have <= width) return text;
  if (width == 0) return "";
  const size_t keep = width - 1;
  const size_t head = (keep + 1) / 2;
  const size_t tail = keep - head;
  return text.substr(0, ByteOffset(text, head)) + std::string(kEllipsis) +
         text.substr(ByteOffset(text, have - tail));
}

std::string TrimRight(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

std::string FitLine(const std::string& head, const std::string& tail) {
  const std::string fitted = ElideMiddle(head, kTextWidth - kMinNameWidth);
  return fitted + ElideMiddle(tail, kTextWidth - DisplayWidth(fitted)) + "\n";
}

std::string WrapText(const std::string& text, const std::string& first, const std::string& rest) {
  std::string out;
  std::string line = first;
  bool line_empty = true;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) {
      std::string word = text.substr(pos, end - pos);
      if (!line_empty && DisplayWidth(line) + 1 + DisplayWidth(word) > kTextWidth) {
        out += line + "\n";
        line = rest;
        line_empty = true;
      }
      const size_t used = DisplayWidth(line) + (line_empty ? 0 : 1);
      const size_t room = kTextWidth - std::min(kTextWidth - 1, used);
      if (DisplayWidth(word) > room) word = ElideMiddle(word, room);
      line += (line_empty ? "" : " ") + word;
      line_empty = false;
    }
    pos = end + 1;
  }
  return out + line + "\n";
}

std::string AdviceText(const nlohmann::json& advice) {
  std::string out;
  if (!ElementsOf(advice).empty()) out += "\n";
  for (const nlohmann::json* entry : ElementsOf(advice)) {
    out += WrapText(StringText(Field(*entry, "cause")),
                    "advice (" + StringText(Field(*entry, "code")) + "): ", "  ");
    out += WrapText(StringText(Field(*entry, "remedy")), "  remedy: ", "  ");
  }
  return out;
}

std::string StatusNote(const nlohmann::json& process) {
  const std::string status = StringText(Field(process, "status"));
  if (status == "host_only") {
    return WrapText(
        "CUDA never started in this process: its host ranges are all it has, and no device "
        "time is missing (loss counts any dropped record).",
        "  host only: ", "    ");
  }
  if (status != "truncated") return "";
  const nlohmann::json& lost = Field(Field(process, "loss"), "lost_span");
  std::string note;
  if (lost.is_object()) {
    note =
        "its stream ended without a Goodbye (the process was killed or crashed, or left "
        "through _exit where the shim was not preloaded): what it recorded after its last "
        "record may be lost";
    const std::optional<double> ns = NumberOf(Field(lost, "ns"));
    note += ns ? ", " + MsText(Field(lost, "ns")) + " ms of it until its connection closed."
               : " (when its connection closed is not known).";
  } else {
    note = "CUPTI stopped mid-run: device records end early.";
  }
  return WrapText(note + " Its numbers are partial.", "  truncated: ", "    ");
}

void TextTable::Add(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back({std::move(cells), {}, false});
}

void TextTable::AddNote(std::string note) { rows_.push_back({{}, std::move(note), false}); }

void TextTable::AddText(std::string text) { rows_.push_back({{}, std::move(text), true}); }

std::string TextTable::Render() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = DisplayWidth(columns_[c].header);
    for (const Row& row : rows_) {
      if (!row.cells.empty()) widths[c] = std::max(widths[c], DisplayWidth(row.cells[c]));
    }
  }
  size_t others = DisplayWidth(indent_);
  for (size_t c = 1; c < columns_.size(); ++c) others += 2 + widths[c];
  const size_t room = others + kMinNameWidth < kTextWidth ? kTextWidth - others : kMinNameWidth;
  widths[0] = std::min(widths[0], room);

  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  std::string out = Line(headers, widths);
  for (const Row& row : rows_) {
    if (!row.cells.empty() && names_ == Names::kWhole && DisplayWidth(row.cells[0]) > widths[0]) {
      out += WholeName(row.cells[0]);  // the whole name, then its cells
      std::vector<std::string> cells = row.cells;
      cells[0].clear();
      out += Line(cells, widths);
    } else if (!row.cells.empty()) {
      out += Line(row.cells, widths);
    } else {
      out += (row.whole ? indent_ + row.note : ElideMiddle(indent_ + row.note, kTextWidth)) + "\n";
    }
  }
  return out;
}

std::string TextTable::WholeName(const std::string& cell) const {
  const size_t spaces = std::min(cell.find_first_not_of(' '), cell.size());
  const std::string lead = indent_ + cell.substr(0, spaces);
  const size_t room = kTextWidth > DisplayWidth(lead) + kMinNameWidth
                          ? kTextWidth - DisplayWidth(lead)
                          : kMinNameWidth;
  // A name wider than the line continues on the next, broken between characters, never elided.
  std::string out;
  std::string piece;
  size_t piece_width = 0;
  for (size_t i = spaces; i < cell.size(); ++i) {
    const bool starts_character = !IsContinuationByte(cell[i]);
    if (starts_character && piece_width == room) {
      out += lead + piece + "\n";
      piece.clear();
      piece_width = 0;
    }
    piece += cell[i];
    piece_width += starts_character ? 1 : 0;
  }
  return out + TrimRight(lead + piece) + "\n";
}

std::string TextTable::Line(const std::vector<std::string>& cells,
                            const std::vector<size_t>& widths) const {
  std::string line = indent_;
  for (size_t c = 0; c < cells.size(); ++c) {
    std::string cell = cells[c];
    if (c == 0) {
      const size_t spaces = cell.find_first_not_of(' ') == std::string::npos
                                ? cell.size()
                                : cell.find_first_not_of(' ');
      const size_t spaces_kept = std::min(spaces, widths[0]);
      cell =
          std::string(spaces_kept, ' ') + ElideMiddle(cell.substr(spaces), widths[0] - spaces_kept);
    }
    const std::string padding(widths[c] - std::min(widths[c], DisplayWidth(cell)), ' ');
    if (c > 0) line += "  ";
    line += columns_[c].left ? cell + padding : padding + cell;
  }
  return TrimRight(line) + "\n";
}

}  // namespace gpuattr::collector
