#include "import/json_event_stream.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gpuattr::collector {
namespace {

struct Collect : TraceEventHandler {
  Status OnEvent(std::string_view text) override {
    events.emplace_back(text);
    return Status::Ok();
  }
  Status OnTopLevel(std::string_view key, std::string_view text) override {
    top.emplace_back(std::string(key) + "=" + std::string(text));
    return Status::Ok();
  }
  std::vector<std::string> events;
  std::vector<std::string> top;
};

// Serves the bytes a few at a time, so every scan crosses chunk boundaries.
class Trickle : public ByteSource {
 public:
  Trickle(std::string bytes, size_t step) : bytes_(std::move(bytes)), step_(step) {}
  StatusOr<size_t> Read(char* out, size_t capacity) override {
    const size_t n = std::min({capacity, step_, bytes_.size() - at_});
    bytes_.copy(out, n, at_);
    at_ += n;
    return n;
  }

 private:
  std::string bytes_;
  size_t step_;
  size_t at_ = 0;
};

Status Split(const std::string& text, Collect* out, size_t step = 1 << 20) {
  Trickle source(text, step);
  return SplitTraceEvents(&source, out, nullptr);
}

TEST_CASE("The splitter hands over each event and the other top-level members", "[import][json]") {
  const std::string text =
      R"({"schemaVersion": 1, "distributedInfo": {"rank": 3},
          "traceEvents": [ {"name": "a}\"]", "args": {"x": [1, {"y": "}"}]}} ,{"ph":"X"}],
          "baseTimeNanoseconds": 17})";
  for (size_t step : {size_t{1}, size_t{3}, size_t{1} << 20}) {
    Collect collect;
    REQUIRE(Split(text, &collect, step).ok());
    REQUIRE(collect.events.size() == 2);
    CHECK(collect.events[0] == R"({"name": "a}\"]", "args": {"x": [1, {"y": "}"}]}})");
    CHECK(collect.events[1] == R"({"ph":"X"})");
    CHECK(collect.top == std::vector<std::string>{"schemaVersion=1",
                                                  R"(distributedInfo={"rank": 3})",
                                                  "baseTimeNanoseconds=17"});
  }
}

TEST_CASE("Quotes, escapes and brackets in strings are skipped wherever they fall",
          "[import][json]") {
  // Every offset of the tricky bytes within a word, in events that cross chunk boundaries.
  std::vector<std::string> events;
  for (size_t pad = 0; pad < 17; ++pad) {
    const std::string filler(pad, 'x');
    events.push_back(R"({"name": ")" + filler + R"(}]\"\\", "a": [)" + std::to_string(pad) + "]}");
    events.push_back(R"({")" + filler + R"(": {"b": "[{\\"}, "c": ")" + filler + R"("})");
  }
  std::string text = R"({"traceEvents": [)";
  for (size_t i = 0; i < events.size(); ++i) text += (i ? "," : "") + events[i];
  text += "]}";
  for (size_t step : {size_t{1}, size_t{7}, size_t{9}, size_t{1} << 20}) {
    INFO("step " << step);
    Collect collect;
    REQUIRE(Split(text, &collect, step).ok());
    CHECK(collect.events == events);
  }
}

// A random JSON value: nested objects and arrays of numbers and of strings full of brackets
// (and, with `escapes`, of escaped quotes and backslashes), so that every kind of byte falls at
// every offset of the splitter's 64-byte blocks.
std::string RandomValue(std::mt19937* random, bool escapes, int depth) {
  const auto pick = [&](int n) { return static_cast<int>((*random)() % static_cast<unsigned>(n)); };
  const int kind = depth >= 4 ? pick(2) : pick(4);
  if (kind == 0) return std::to_string(pick(100000));
  if (kind == 1) {
    const std::string_view bytes = escapes ? "ab{}[]:, \"\\" : "ab{}[]:, ";
    std::string text = "\"";
    for (int i = pick(90); i > 0; --i) {
      const char c = bytes[static_cast<size_t>(pick(static_cast<int>(bytes.size())))];
      if (c == '"' || c == '\\') text += '\\';
      text += c;
    }
    return text + "\"";
  }
  std::string text(1, kind == 2 ? '[' : '{');
  for (int i = pick(5); i > 0; --i) {
    if (text.size() > 1) text += ", ";
    if (kind == 3) text += RandomValue(random, escapes, 4) + ": ";  // depth 4: a string or a number
    text += RandomValue(random, escapes, depth + 1);
  }
  return text + (kind == 2 ? ']' : '}');
}

TEST_CASE("Events of every shape split where they end, at every block offset", "[import][json]") {
  std::mt19937 random(18);
  std::vector<std::string> events;
  for (int i = 0; i < 2000; ++i) {
    // Half the events without a backslash, so that whole blocks are scanned at once.
    events.push_back(R"({"name": )" + RandomValue(&random, i % 2 == 1, 1) + "}");
  }
  std::string text = R"({"traceEvents": [)";
  for (size_t i = 0; i < events.size(); ++i) text += (i ? "," : "") + events[i];
  text += "]}";
  for (size_t step : {size_t{1}, size_t{63}, size_t{65}, size_t{1000}, size_t{1} << 20}) {
    INFO("step " << step);
    Collect collect;
    REQUIRE(Split(text, &collect, step).ok());
    CHECK(collect.events == events);
  }
}

TEST_CASE("A bare array of events is a trace too", "[import][json]") {
  Collect collect;
  REQUIRE(Split(R"( [ {"a":1}, {"b":2} ] )", &collect).ok());
  CHECK(collect.events.size() == 2);
}

TEST_CASE("Input that is not a trace is refused with the reason", "[import][json]") {
  struct Case {
    const char* text;
    const char* reason;
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty"},
           {"hello", "not JSON"},
           {R"({"traceEvents": [{"a": 1}, {"b": )", "truncated"},
           {R"({"traceEvents": [{"a": "unterminated)", "truncated"},
           {R"({"traceEvents": [1, 2]})", "not an object"},
           {R"({"traceEvents": {}})", "not an array"},
           {R"({"other": []})", "no traceEvents"},
           {R"({})", "no traceEvents"},
           {R"({"traceEvents": []} trailing)", "after the end"},
           {R"({"traceEvents": [{"a": 1} {"b": 2}]})", "expected ','"},
       }) {
    INFO(c.text);
    Collect collect;
    Status status = Split(c.text, &collect, 2);
    REQUIRE_FALSE(status.ok());
    CHECK(status.code() == StatusCode::kDataLoss);
    CHECK(status.message().find(c.reason) != std::string::npos);
  }
}

TEST_CASE("Hostile nesting is refused without recursion", "[import][json]") {
  Collect collect;
  const std::string deep = R"({"traceEvents": [)" + std::string(100000, '[') + "]}";
  Status status = Split(deep, &collect);
  CHECK(status.code() == StatusCode::kDataLoss);
  const std::string deep_object =
      R"({"traceEvents": [{"a":)" + std::string(300, '[') + std::string(300, ']') + "}]}";
  status = Split(deep_object, &collect);
  CHECK(status.message().find("deeper than 256") != std::string::npos);
}

}  // namespace
}  // namespace gpuattr::collector
