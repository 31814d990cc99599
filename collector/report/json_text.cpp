// JsonTextWriter (json_text.h): dump(2)'s layout and escaping on nlohmann's public API.
#include "report/json_text.h"

#include <charconv>
#include <cstdint>
#include <utility>

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) that starts at text[at], a byte >= 0x80; 0 when there is none.
size_t Utf8SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < second_min || byte(at + 1) > second_max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

template <typename Integer>
void AppendInteger(Integer value, std::string* out) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  out->append(digits, static_cast<size_t>(end - digits));
}

}  // namespace

JsonTextWriter::JsonTextWriter(std::function<void(const std::string&)> sink)
    : sink_(std::move(sink)) {
  pending_.reserve(kPieceBytes + kPieceBytes / 8);
}

void JsonTextWriter::Flush() {
  if (pending_.empty()) return;
  sink_(pending_);
  pending_.clear();
}

void JsonTextWriter::Key(std::string_view key) {
  String(key);
  Raw(": ");
}

void JsonTextWriter::String(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const size_t start = pending_.size();
  pending_.push_back('"');
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(text, i);
      if (length == 0) {  // not UTF-8: the library's replacement characters
        pending_.resize(start);
        pending_.append(
            Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace));
        return;
      }
      i += length - 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    pending_.append(text.substr(run, i - run));
    run = i + 1;
    switch (c) {
      case '"':
        pending_.append("\\\"");
        break;
      case '\\':
        pending_.append("\\\\");
        break;
      case '\b':
        pending_.append("\\b");
        break;
      case '\f':
        pending_.append("\\f");
        break;
      case '\n':
        pending_.append("\\n");
        break;
      case '\r':
        pending_.append("\\r");
        break;
      case '\t':
        pending_.append("\\t");
        break;
      default:
        pending_.append("\\u00");
        pending_.push_back(kHex[c >> 4]);
        pending_.push_back(kHex[c & 0xF]);
        break;
    }
  }
  pending_.append(text.substr(run));
  pending_.push_back('"');
}

void JsonTextWriter::Reindented(const std::string& text, unsigned indent) {
  for (const char c : text) {
    pending_.push_back(c);
    if (c == '\n') Indent(indent);
  }
}

void JsonTextWriter::Value(const Json& value, unsigned indent) {
  switch (value.type()) {
    case Json::value_t::object:
    case Json::value_t::array: {
      const bool object = value.is_object();
      if (value.empty()) {
        Raw(object ? "{}" : "[]");
        return;
      }
      Raw(object ? "{\n" : "[\n");
      const unsigned inner = indent + kIndentStep;
      bool first = true;
      for (auto element = value.begin(); element != value.end(); ++element) {
        if (!first) Raw(",\n");
        first = false;
        Indent(inner);
        if (object) Key(element.key());
        Value(element.value(), inner);
        FlushWhenFull();
      }
      Raw('\n');
      Indent(indent);
      Raw(object ? '}' : ']');
      return;
    }
    case Json::value_t::string:
      String(value.get_ref<const std::string&>());
      return;
    case Json::value_t::boolean:
      Raw(value.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::null:
      Raw("null");
      return;
    case Json::value_t::number_integer:
      AppendInteger(value.get<int64_t>(), &pending_);
      return;
    case Json::value_t::number_unsigned:
      AppendInteger(value.get<uint64_t>(), &pending_);
      return;
    case Json::value_t::number_float:
      pending_.append(value.dump());
      return;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  Reindented(value.dump(kIndentStep, ' ', false, Json::error_handler_t::replace), indent);
}

}  // namespace gpuattr::collector
