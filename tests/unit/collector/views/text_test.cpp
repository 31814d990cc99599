// The text toolkit (views/text.h): one spelling of "not measured", sanitising, widths in code
// points, elision, wrapping and tables.
#include "views/text.h"

#include <catch2/catch.hpp>
#include <string>

namespace gpuattr::collector::testing {
namespace {

using Json = nlohmann::json;

TEST_CASE("a value that is not there reads as n/a, whatever its kind", "[unit][text]") {
  CHECK(std::string(kNotMeasured) == "n/a");
  CHECK(MsText(Json(1250000)) == "1.250");
  CHECK(MsText(Json(nullptr)) == kNotMeasured);
  CHECK(MsText(Json("5")) == kNotMeasured);
  CHECK(CountText(Json(42)) == "42");
  CHECK(CountText(Json(-3)) == "-3");
  CHECK(CountText(Json(1.5)) == kNotMeasured);
  CHECK(CountText(Json()) == kNotMeasured);
  CHECK(StringText(Json("a\tb")) == "a?b");
  CHECK(StringText(Json(7)) == kNotMeasured);
  CHECK(YesNoText(Json(true)) == "yes");
  CHECK(YesNoText(Json("true")) == kNotMeasured);
  CHECK(PathText(Json({"step", "forward"})) == "step/forward");
  CHECK(PathText(Json::array()) == "(no range)");
  CHECK(PathText(Json({"step", 3})) == "step/n/a");
  CHECK(PathText(Json("step")) == kNotMeasured);
  CHECK(NumberOf(Json(2)) == 2.0);
  CHECK_FALSE(NumberOf(Json("2")));
  CHECK(Formatted("%.3f", 1.23456) == "1.235");
  CHECK(ElementsOf(Json({1, 2})).size() == 2);
  CHECK(ElementsOf(Json::object()).empty());
}

TEST_CASE("text is sanitised, measured in code points and elided in the middle", "[unit][text]") {
  CHECK(SanitizedText(std::string("a\x1b[31mb\x7f", 8)) == "a?[31mb?");
  CHECK(SanitizedText("c\xc2\x85"
                      "d") == "c?d");  // a C1 control (NEL)
  CHECK(SanitizedText("é") == "é");    // other two-byte sequences pass
  CHECK(DisplayWidth("aé…") == 3);
  CHECK(ElideMiddle("abcdefghij", 10) == "abcdefghij");
  CHECK(ElideMiddle("abcdefghij", 5) == "ab…ij");
  CHECK(ElideMiddle("abcdefghij", 0).empty());
  CHECK(TrimRight("x  ") == "x");
  const std::string line = FitLine(std::string(200, 'h'), std::string(200, 't'));
  CHECK(DisplayWidth(line) == kTextWidth + 1);  // with its newline
}

TEST_CASE("wrapped text keeps its prefixes and fits the width", "[unit][text]") {
  std::string words;
  for (int i = 0; i < 40; ++i) words += "word" + std::to_string(i) + " ";
  const std::string wrapped = WrapText(words, "  first: ", "    ");
  CHECK(wrapped.rfind("  first: word0", 0) == 0);
  size_t lines = 0;
  for (size_t start = 0, end; (end = wrapped.find('\n', start)) != std::string::npos;
       start = end + 1) {
    const std::string one = wrapped.substr(start, end - start);
    CHECK(DisplayWidth(one) <= kTextWidth);
    if (lines++ > 0) CHECK(one.rfind("    word", 0) == 0);
  }
  CHECK(lines > 1);
}

TEST_CASE("a table aligns its columns and elides only the name column", "[unit][text]") {
  TextTable table("  ", {{"name", true}, {"ms"}, {"class", true}});
  table.Add({"short", "1.000", "a"});
  table.Add({"  " + std::string(150, 'n'), "123.456", "bb"});
  table.AddNote("… 2 more " + std::string(200, 'x'));
  table.AddText(std::string(120, 'w'));
  const std::string text = table.Render();
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind("  name", 0) == 0);
  CHECK(lines[1].find("    1.000  a") != std::string::npos);  // numbers right-aligned
  CHECK(lines[2].rfind("    nnn", 0) == 0);                   // indentation kept
  CHECK(lines[2].find("…") != std::string::npos);
  CHECK(lines[2].find("123.456  bb") != std::string::npos);
  CHECK(DisplayWidth(lines[2]) <= kTextWidth);
  CHECK(DisplayWidth(lines[3]) == kTextWidth);      // a note is elided
  CHECK(lines[4] == "  " + std::string(120, 'w'));  // a text is kept whole
}

TEST_CASE("a status that is not plain says what it means", "[unit][text]") {
  using Catch::Contains;
  const Json cut = {
      {"status", "truncated"},
      {"loss", {{"lost_span", {{"from_ns", 10}, {"to_ns", 2500010}, {"ns", 2500000}}}}}};
  CHECK_THAT(StatusNote(cut), Contains("truncated: its stream ended without a Goodbye"));
  CHECK_THAT(StatusNote(cut), Contains("2.500 ms of it until its connection closed"));
  const Json unknown_close = {{"status", "truncated"},
                              {"loss", {{"lost_span", {{"from_ns", 10}, {"ns", nullptr}}}}}};
  CHECK_THAT(StatusNote(unknown_close), Contains("is not known"));
  const Json cupti_stopped = {{"status", "truncated"}, {"loss", {{"lost_span", nullptr}}}};
  CHECK_THAT(StatusNote(cupti_stopped), Contains("CUPTI stopped mid-run"));
  CHECK_THAT(StatusNote({{"status", "host_only"}}), Contains("host only: CUDA never started"));
  CHECK(StatusNote({{"status", "complete"}}).empty());
  CHECK(StatusNote({{"status", "refused"}}).empty());
  CHECK(StatusNote(Json::array()).empty());
  CHECK(StatusNote(cut).back() == '\n');  // a paragraph of its own
}

}  // namespace
}  // namespace gpuattr::collector::testing
