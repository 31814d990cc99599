// JsonTextWriter (report/json_text.h) against nlohmann's dump(2, ' ', false, replace): the same
// bytes for every kind of value, every escape, valid and invalid UTF-8, floats, and random
// strings of any bytes.
#include "report/json_text.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

std::string Written(const Json& value, unsigned indent = 0) {
  std::string whole;
  JsonTextWriter text([&whole](const std::string& piece) { whole += piece; });
  text.Value(value, indent);
  text.Flush();
  return whole;
}

std::string Dumped(const Json& value) {
  return value.dump(2, ' ', false, Json::error_handler_t::replace);
}

TEST_CASE("JsonTextWriter writes what dump(2) writes", "[unit][report]") {
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  const std::vector<std::string> strings = {
      "",
      "plain",
      "quote \" backslash \\ slash /",
      "\b\f\n\r\t\x01\x1f\x7f",
      "é ü 中文 𝄞 \xf4\x8f\xbf\xbf",  // 2, 3 and 4 bytes; U+10FFFF
      "\x80",
      "a\xc3",
      "\xc0\x80",
      "\xed\xa0\x80",
      "\xf5\x80\x80\x80",
      "\xe0\x9f\xbf",
      "\xf0\x8f\xbf\xbf",
      "\xf4\x90\x80\x80",
      "ok\xffok\xfe\xc3\xa9",
      every_byte};
  for (const std::string& s : strings) {
    INFO(Json(s).dump(-1, ' ', true, Json::error_handler_t::replace));
    CHECK(Written(Json(s)) == Dumped(Json(s)));
  }
  const std::vector<double> floats = {0.0,
                                      -0.0,
                                      1.0,
                                      0.1,
                                      1.0 / 3,
                                      1e-5,
                                      123456789012345678.0,
                                      1e300,
                                      -2.5e-300,
                                      std::numeric_limits<double>::denorm_min(),
                                      std::nan(""),
                                      std::numeric_limits<double>::infinity()};
  for (const double d : floats) CHECK(Written(Json(d)) == Dumped(Json(d)));
  const Json document = {
      {"empty_object", Json::object()},
      {"empty_array", Json::array()},
      {"integers",
       {std::numeric_limits<int64_t>::min(), int64_t{-1}, 0, std::numeric_limits<uint64_t>::max()}},
      {"nested", {{"a", {{"b", {1, {{"c", nullptr}}, Json::array({Json::array()})}}}}}},
      {"booleans", {true, false}},
      {"strings", strings},
      {"floats", floats},
      {"binary", Json::binary({1, 2, 3}, 7)},
      {"z\x01key\xff", "last"}};
  CHECK(Written(document) == Dumped(document));
  // Starting `indent` columns in: every line after the first is indented by as much.
  const std::string nested = Written(document, 4);
  CHECK(nested.find("\n      \"booleans\"") != std::string::npos);
  CHECK(nested.substr(nested.size() - 6) == "\n    }");
}

TEST_CASE("JsonTextWriter escapes random bytes as dump does", "[unit][report]") {
  std::mt19937_64 random(20261204);
  for (int i = 0; i < 20000; ++i) {
    std::string s(random() % 12, '\0');
    for (char& c : s) {
      // Mostly the bytes UTF-8 is made of, so that valid sequences occur too.
      const uint64_t pick = random() % 4;
      c = static_cast<char>(pick == 0   ? random() % 256
                            : pick == 1 ? 0x80 + random() % 64
                            : pick == 2 ? 0xC2 + random() % 51
                                        : 0x20 + random() % 96);
    }
    INFO(i);
    REQUIRE(Written(Json(s)) == Dumped(Json(s)));
  }
}

TEST_CASE("JsonTextWriter hands its text over in pieces of about 1 MiB", "[unit][report]") {
  Json big = Json::array();
  for (int i = 0; i < 200000; ++i) big.push_back({{"index", i}, {"name", "step"}});
  std::vector<size_t> pieces;
  std::string whole;
  JsonTextWriter text([&](const std::string& piece) {
    pieces.push_back(piece.size());
    whole += piece;
  });
  text.Value(big, 0);
  text.Flush();
  CHECK(whole == Dumped(big));
  REQUIRE(pieces.size() > 2);
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    CHECK(pieces[i] >= JsonTextWriter::kPieceBytes);
    CHECK(pieces[i] < JsonTextWriter::kPieceBytes + 4096);
  }
}

}  // namespace
}  // namespace gpuattr::collector
