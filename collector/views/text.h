// The text toolkit every view of a report is written with: the terminal view (`gpuattr report`),
// the summary on stderr after a run, `gpuattr diff` and `gpuattr gate`.
//
// A report read back is untrusted (report_reader.h): a field may be missing, null or of another
// type, and a name may hold control characters. So values are read through NumberOf and the
// *Text functions, which never throw and spell a value that is not there, or was not measured,
// one way: kNotMeasured. Strings lose their control characters before they reach a terminal.
// Widths count code points (nlohmann's parser only lets valid UTF-8 into strings); names are
// elided in the middle with "…", numbers are never cut. Pure; any thread.
#ifndef GPUATTR_COLLECTOR_VIEWS_TEXT_H_
#define GPUATTR_COLLECTOR_VIEWS_TEXT_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuattr::collector {

// What every view prints for a value that is missing, null, of the wrong type, or not measured.
inline constexpr char kNotMeasured[] = "n/a";
// The width views fit their lines to.
inline constexpr size_t kTextWidth = 100;

// ---- Values ----

// The number `value` holds, if it is one.
std::optional<double> NumberOf(const nlohmann::json& value);
// printf of one double.
std::string Formatted(const char* format, double value);
// Nanoseconds as milliseconds with three decimals ("1.250"); kNotMeasured for a non-number.
std::string MsText(const nlohmann::json& ns);
// An integer as written; kNotMeasured for anything else.
std::string CountText(const nlohmann::json& value);
// A number with an SI prefix and `unit`: "17.18 GFLOP", "989.4 TFLOP/s"; "n/a" when not one.
std::string SiText(const nlohmann::json& value, const char* unit);
// A string, sanitised; kNotMeasured for anything else.
std::string StringText(const nlohmann::json& value);
// "yes" or "no"; kNotMeasured for anything else.
std::string YesNoText(const nlohmann::json& value);
// A pass path as "step/forward": "(no range)" when empty, kNotMeasured when not an array.
std::string PathText(const nlohmann::json& path);
// How a tree or a path shows a range name: a module's (`nn.Module: …`) without the prefix, and
// relative to `parent_module`, the innermost module range above it (empty: none), when it is
// qualified under it (`stage2.conv1` under `stage2` reads `conv1`); other names as they are.
std::string ReadableName(std::string_view name, std::string_view parent_module);
// PathText of a pass path with ReadableName's names: `ProfilerStep#0/GPT_0/h.0/attn/c_attn`.
std::string ReadablePathText(const nlohmann::json& path);
// The elements of `value` when it is an array, else none.
std::vector<const nlohmann::json*> ElementsOf(const nlohmann::json& value);

// ---- Text ----

// Control characters (C0, DEL, C1) become '?': a report must not drive the terminal.
std::string SanitizedText(std::string_view text);
// Display width in code points.
size_t DisplayWidth(std::string_view text);
// `text` cut in the middle to `width` code points, with "…" where the middle was.
std::string ElideMiddle(const std::string& text, size_t width);
// Removes trailing spaces.
std::string TrimRight(std::string line);
// `head` (elided to leave room for a short tail) then `tail` elided to what is left of
// kTextWidth, as one line.
std::string FitLine(const std::string& head, const std::string& tail);
// `text` wrapped at spaces to kTextWidth: the first line after `first`, the others after `rest`
// (both prefixes count in the width). A word longer than a line is elided.
std::string WrapText(const std::string& text, const std::string& first, const std::string& rest);

// ---- Parts several views print ----

// The report's `advice` (a missing field reads as none) as a paragraph to end a view with: a
// blank line, then each entry's code and cause and its remedy, wrapped; "" without advice.
std::string AdviceText(const nlohmann::json& advice);

// What a process's status means, when it is not plain (truncated: what may be lost, from
// loss.lost_span; host_only: that no device time is missing), as an indented paragraph; "" for
// complete and refused (a refusal prints its own cause and remedy) and for a status this build does
// not know.
std::string StatusNote(const nlohmann::json& process);

// ---- Tables ----

// Rows of cells under a header line, columns as wide as their widest cell, two spaces apart.
// Column 0 is the name column: elided in the middle to the room the other columns leave of
// kTextWidth (its leading spaces, a tree's indentation, are kept), or, in a table of whole names
// (a pass tree, the modules), never elided: a name longer than the room has a line of its own
// (lines, when it is wider than the text), its cells on the next. Notes are short free lines ("… 3
// more") between rows, elided to the width; texts are free lines kept whole (a gate check's
// reason). Numbers are right-aligned unless a column says `left`.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool left = false;
  };
  enum class Names { kElided, kWhole };

  TextTable(std::string indent, std::vector<Column> columns, Names names = Names::kElided)
      : indent_(std::move(indent)), columns_(std::move(columns)), names_(names) {}

  void Add(std::vector<std::string> cells);
  void AddNote(std::string note);
  void AddText(std::string text);
  std::string Render() const;

 private:
  struct Row {
    std::vector<std::string> cells;  // empty for a note or a text
    std::string note;
    bool whole = false;  // a text: not elided
  };

  std::string Line(const std::vector<std::string>& cells, const std::vector<size_t>& widths) const;
  // A whole name's own lines (Names::kWhole), its leading spaces kept.
  std::string WholeName(const std::string& cell) const;

  std::string indent_;
  std::vector<Column> columns_;
  Names names_;
  std::vector<Row> rows_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_VIEWS_TEXT_H_
