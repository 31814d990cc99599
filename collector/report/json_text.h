// JSON text as nlohmann's `dump(2, ' ', false, error_handler_t::replace)` writes it, built on the
// library's public API only (its internal serializer can change with any release): the report
// writer's output (report_writer.h).
//
// Containers, keys, integers, null and booleans are written here: objects in their iteration
// order (nlohmann's std::map: keys sorted), dump(2)'s indentation, and strings escaped as nlohmann
// escapes them (", \, \b \f \n \r \t, the other control characters as \u00xx; everything else,
// UTF-8 included, as is). What is not worth redoing is asked of the public dump() and laid out
// here: floating-point numbers (nlohmann's own shortest round-trip form, "1.0", "1e-05"), strings
// that are not valid UTF-8 (their replacement characters), and binary or discarded values.
//
// The text goes to `sink` in pieces of about kPieceBytes, so a writer never holds more than one
// piece of it. Single-threaded.
#ifndef GPUATTR_COLLECTOR_REPORT_JSON_TEXT_H_
#define GPUATTR_COLLECTOR_REPORT_JSON_TEXT_H_

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpuattr::collector {

class JsonTextWriter {
 public:
  static constexpr size_t kPieceBytes = size_t{1} << 20;
  static constexpr unsigned kIndentStep = 2;

  explicit JsonTextWriter(std::function<void(const std::string&)> sink);

  void Raw(std::string_view text) { pending_.append(text); }
  void Raw(char c) { pending_.push_back(c); }
  void Indent(unsigned width) { pending_.append(width, ' '); }
  // `"key": `.
  void Key(std::string_view key);
  // `value` as dump(2) writes it starting `indent` columns in.
  void Value(const nlohmann::json& value, unsigned indent);
  // Hands what is pending to the sink (also done on the way once a piece is full).
  void Flush();

 private:
  void String(std::string_view text);
  void FlushWhenFull() {
    if (pending_.size() >= kPieceBytes) Flush();
  }
  // `text` (a value as dump(2) writes it at column 0) laid out `indent` columns in.
  void Reindented(const std::string& text, unsigned indent);

  std::function<void(const std::string&)> sink_;
  std::string pending_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_JSON_TEXT_H_
