// The self-contained HTML report (`gpuattr report REPORT.json --html OUT.html`) in a real
// browser: headless Chromium (Debian's chromium package; scripts/setup.sh installs it, CMake
// finds it at configure time). The page must make no request (no http:// or https:// in the
// file), its script must render the report's pass names and numbers into the DOM (checked in
// --dump-dom's output, outside the embedded data), and its screenshot must not be blank
// (decoded here with zlib). A 10,000-node pass tree must render too. Without Chromium the
// tests fail and say how to get it: they are never skipped.
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadFile;
using test_support::RunProcess;
using test_support::TempDir;

void RequireChromium() {
  if (std::string(GPUATTR_CHROMIUM).empty()) {
    FAIL(
        "chromium was not found when the build was configured: install Debian's chromium "
        "package (scripts/setup.sh does) and configure again");
  }
}

// Runs headless Chromium on `page` with `args`; its profile lives in `profile`.
ProcessResult RunChromium(const TempDir& profile, const std::string& page,
                          std::vector<std::string> args) {
  std::vector<std::string> argv = {GPUATTR_CHROMIUM,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--disable-extensions",
                                   "--disable-dev-shm-usage",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + profile.File("chromium")};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("file://" + page);
  return RunProcess(argv, {{"HOME", profile.path()}}, 60);
}

std::string Ms(uint64_t ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(ns) / 1e6);
  return text;
}

// `text` as the DOM dump writes it in an element's content.
std::string HtmlText(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out.push_back(c);
  }
  return out;
}

// The part of the rendered DOM inside the element with this id, up to the end of its first
// table (the embedded report data is elsewhere in the DOM).
std::string Block(const std::string& dom, const std::string& id) {
  const size_t start = dom.find("id=\"" + id + "\"");
  if (start == std::string::npos) return {};
  const size_t end = dom.find("</table>", start);
  return dom.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint32_t> pixels;  // 0xRRGGBB
};

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
}

// Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes).
Image DecodePng(const std::string& png) {
  REQUIRE(png.size() > 33);
  REQUIRE(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  Image image;
  int channels = 0;
  std::string compressed;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = BigEndian32(png, at);
    const std::string type = png.substr(at + 4, 4);
    REQUIRE(at + 12 + length <= png.size());
    if (type == "IHDR") {
      image.width = BigEndian32(png, at + 8);
      image.height = BigEndian32(png, at + 12);
      const int depth = png[at + 16];
      const int color = png[at + 17];
      REQUIRE(depth == 8);
      REQUIRE((color == 2 || color == 6));
      REQUIRE(png[at + 20] == 0);  // not interlaced
      channels = color == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      compressed += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  REQUIRE(channels > 0);
  const size_t stride = static_cast<size_t>(image.width) * channels;
  std::vector<unsigned char> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  REQUIRE(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(compressed.data()),
                     compressed.size()) == Z_OK);
  REQUIRE(raw_size == raw.size());
  std::vector<unsigned char> previous(stride, 0);
  std::vector<unsigned char> row(stride);
  image.pixels.reserve(static_cast<size_t>(image.width) * image.height);
  for (uint32_t y = 0; y < image.height; ++y) {
    const unsigned char filter = raw[y * (stride + 1)];
    const unsigned char* in = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int left = x >= static_cast<size_t>(channels) ? row[x - channels] : 0;
      const int up = previous[x];
      const int up_left = x >= static_cast<size_t>(channels) ? previous[x - channels] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          predicted = 0;
          break;
        case 1:
          predicted = left;
          break;
        case 2:
          predicted = up;
          break;
        case 3:
          predicted = (left + up) / 2;
          break;
        case 4: {
          const int p = left + up - up_left;
          const int pa = std::abs(p - left), pb = std::abs(p - up), pc = std::abs(p - up_left);
          predicted = pa <= pb && pa <= pc ? left : pb <= pc ? up : up_left;
          break;
        }
        default:
          FAIL("PNG row filter " << int(filter));
      }
      row[x] = static_cast<unsigned char>(in[x] + predicted);
    }
    for (uint32_t x = 0; x < image.width; ++x) {
      const unsigned char* p = &row[x * channels];
      image.pixels.push_back(uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]);
    }
    previous = row;
  }
  return image;
}

// The overview's cards as (label, value) pairs, from --dump-dom's text of #overview.
std::map<std::string, std::string> OverviewCards(const std::string& dom) {
  std::map<std::string, std::string> cards;
  const size_t start = dom.find("id=\"overview\"");
  if (start == std::string::npos) return cards;
  const size_t end = dom.find("</section>", start);
  for (size_t at = dom.find("<div class=\"card\">", start); at < end && at != std::string::npos;
       at = dom.find("<div class=\"card\">", at + 1)) {
    const auto text_of = [&](const std::string& cls) {
      const size_t open = dom.find("class=\"" + cls, at);
      const size_t begin = dom.find('>', open) + 1;
      return dom.substr(begin, dom.find('<', begin) - begin);
    };
    cards[text_of("k")] = text_of("v");
  }
  return cards;
}

// The page's laid-out width and the window's, from the attributes the page sets when rendered.
std::pair<int, int> LaidOutWidth(const std::string& dom) {
  const auto attribute = [&](const std::string& name) {
    const size_t at = dom.find(name + "=\"");
    return at == std::string::npos ? -1 : std::stoi(dom.substr(at + name.size() + 2));
  };
  return {attribute("data-scroll-width"), attribute("data-window-width")};
}

void CollectPasses(const json& pass, std::vector<const json*>& out) {
  out.push_back(&pass);
  for (const json& child : pass["children"]) CollectPasses(child, out);
}

TEST_CASE(
    "The HTML report of a scenario renders its passes and numbers in Chromium, and is not blank",
    "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  const auto [report, truth] =
      RunScenario(dir, std::string(GPUATTR_SCENARIO_DIR) + "/warmup_steps.json");
  const std::string page = dir.File("report.html");
  const ProcessResult html =
      RunProcess({GPUATTR_BIN, "report", dir.File("report.json"), "--html", page});
  INFO("gpuattr report stderr: " << html.err);
  REQUIRE(ExitStatus(html) == 0);
  CHECK(html.out.empty());
  const std::string file = ReadFile(page);
  REQUIRE_FALSE(file.empty());
  CHECK(file.find("http://") == std::string::npos);
  CHECK(file.find("https://") == std::string::npos);

  const ProcessResult dom_run = RunChromium(dir, page, {"--dump-dom"});
  INFO("chromium stderr: " << dom_run.err);
  REQUIRE(ExitStatus(dom_run) == 0);
  const std::string& dom = dom_run.out;
  REQUIRE(dom.find("data-rendered=\"yes\"") != std::string::npos);

  const json& process = report["processes"][0];
  std::vector<const json*> passes;
  for (const json& root : process["passes"]) CollectPasses(root, passes);
  REQUIRE(passes.size() >= 3);
  const std::string pass_block = Block(dom, "passes");
  REQUIRE_FALSE(pass_block.empty());
  for (const json* pass : passes) {
    INFO("pass " << (*pass)["path"].dump());
    CHECK(pass_block.find(HtmlText((*pass)["name"].get<std::string>())) != std::string::npos);
    CHECK(pass_block.find(Ms((*pass)["device"]["self_ns"])) != std::string::npos);
    CHECK(pass_block.find(Ms((*pass)["device"]["total_ns"])) != std::string::npos);
  }
  const std::string family_block = Block(dom, "families");
  REQUIRE(process["families"].size() >= 2);
  for (const json& family : process["families"]) {
    INFO("family " << family["family"]);
    CHECK(family_block.find(HtmlText(family["family"].get<std::string>())) != std::string::npos);
    CHECK(family_block.find(Ms(family["total_ns"])) != std::string::npos);
  }
  const std::string device_block = Block(dom, "devices");
  const json& device = process["devices"][0];
  CHECK(device_block.find("busy " + Ms(device["busy_ns"])) != std::string::npos);
  CHECK(device_block.find("host-bound " + Ms(device["gaps"]["host_bound_ns"])) !=
        std::string::npos);
  CHECK(device_block.find("communication " + Ms(device["categories"]["communication_ns"]) +
                          " (hidden under compute " +
                          Ms(device["categories"]["communication_hidden_ns"])) !=
        std::string::npos);
  for (const json& stream : device["streams"]) {
    CHECK(device_block.find(Ms(stream["idle_ns"])) != std::string::npos);
  }
  const std::string step_block = Block(dom, "steps");
  REQUIRE(process["steps"]["rows"].size() >= 2);
  for (const json& row : process["steps"]["rows"]) {
    CHECK(step_block.find(row["name"].get<std::string>() + " #" +
                          std::to_string(row["index"].get<int>())) != std::string::npos);
    CHECK(step_block.find(Ms(row["gaps_ns"])) != std::string::npos);
  }
  char coverage[32];
  std::snprintf(coverage, sizeof(coverage), "%.1f %%",
                process["coverage"]["attributed_fraction"].get<double>() * 100);
  CHECK(Block(dom, "coverage").find(coverage) != std::string::npos);

  // The overview answers first: how idle the GPU was and why, then coverage and losses.
  const std::map<std::string, std::string> cards = OverviewCards(dom);
  INFO("overview cards: " << cards.size());
  char idle[32];
  std::snprintf(idle, sizeof(idle), "%.1f %%",
                100.0 * device["idle_ns"].get<double>() / device["span_ns"].get<double>());
  CHECK(cards.at("GPU idle") == idle);
  const json& gaps = device["gaps"];
  std::pair<std::string, uint64_t> cause{"", 0};
  for (const auto& [label, key] : {std::pair{"host-bound", "host_bound_ns"},
                                   {"dependency", "dependency_ns"},
                                   {"unclassified", "unclassified_ns"}}) {
    if (gaps[key].get<uint64_t>() > cause.second) cause = {label, gaps[key].get<uint64_t>()};
  }
  REQUIRE(cause.second > 0);
  CHECK(cards.at("largest cause of idle time") == cause.first + " " + Ms(cause.second));
  CHECK(cards.at("coverage") == coverage);
  CHECK(cards.at("records lost") == "none");  // measured: 0
  CHECK(cards.at("status") == "complete");

  // At 800 px the page is no wider than the window: wide tables scroll inside their sections.
  const ProcessResult narrow = RunChromium(dir, page, {"--window-size=800,1000", "--dump-dom"});
  REQUIRE(ExitStatus(narrow) == 0);
  const auto [laid_out, window] = LaidOutWidth(narrow.out);
  CHECK(window == 800);
  CHECK(laid_out <= window);

  const std::string screenshot = dir.File("report.png");
  const ProcessResult shot =
      RunChromium(dir, page, {"--screenshot=" + screenshot, "--window-size=1400,1000"});
  INFO("chromium stderr: " << shot.err);
  REQUIRE(ExitStatus(shot) == 0);
  const Image image = DecodePng(ReadFile(screenshot));
  CHECK(image.width == 1400);
  CHECK(image.height == 1000);
  std::map<uint32_t, size_t> histogram;
  for (const uint32_t pixel : image.pixels) ++histogram[pixel];
  const auto background =
      std::max_element(histogram.begin(), histogram.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const double drawn = 1.0 - static_cast<double>(background->second) / image.pixels.size();
  INFO("distinct colours " << histogram.size() << ", drawn fraction " << drawn);
  CHECK(histogram.size() >= 32);  // text, charts in several colours
  CHECK(drawn >= 0.10);
}

TEST_CASE("The HTML report of a PyTorch trace shows its modules with backward and recompute",
          "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  const ProcessResult imported =
      RunProcess({GPUATTR_BIN, "import", "-q", "-o", dir.File("report.json"),
                  std::string(GPUATTR_SOURCE_DIR) + "/tests/data/pytorch_checkpointed.json"});
  INFO("gpuattr import stderr: " << imported.err);
  REQUIRE(ExitStatus(imported) == 0);
  const std::string page = dir.File("report.html");
  REQUIRE(ExitStatus(
              RunProcess({GPUATTR_BIN, "report", dir.File("report.json"), "--html", page})) == 0);
  const ProcessResult dom_run = RunChromium(dir, page, {"--dump-dom"});
  INFO("chromium stderr: " << dom_run.err);
  REQUIRE(ExitStatus(dom_run) == 0);
  REQUIRE(dom_run.out.find("data-rendered=\"yes\"") != std::string::npos);
  const std::string modules = Block(dom_run.out, "modules");
  REQUIRE_FALSE(modules.empty());
  const json report = json::parse(ReadFile(dir.File("report.json")));
  const json& rows = report["processes"][0]["modules"];
  REQUIRE(rows.size() == 5);  // one per module, Net_0 and Block_0 with no device time of their own
  for (const json& row : rows) {
    std::string name = row["path"].back().get<std::string>();
    name.erase(0, std::string("nn.Module: ").size());
    INFO(row["path"].dump());
    CHECK(modules.find(name) != std::string::npos);
    CHECK(modules.find(Ms(row["backward_ns"])) != std::string::npos);
  }
  CHECK(modules.find(Ms(rows[0]["recompute_ns"])) != std::string::npos);
  CHECK(modules.find("1.000") != std::string::npos);  // Linear_1: r = recompute / forward
  // What an import does not measure is said so, never a number: no shim, no records lost.
  const std::map<std::string, std::string> cards = OverviewCards(dom_run.out);
  CHECK(report["processes"][0]["loss"]["dropped_records"].is_null());
  CHECK(cards.at("records lost") == "not measured");
  CHECK(cards.at("imported") == "kineto");
  // The header names the import's format and file, where a run names its command.
  const size_t meta = dom_run.out.find("id=\"meta\">");
  REQUIRE(meta != std::string::npos);
  const std::string header = dom_run.out.substr(meta, dom_run.out.find("</div>", meta) - meta);
  CHECK(header.find("import: kineto · pytorch_checkpointed.json") != std::string::npos);
}

TEST_CASE("The HTML report says what a truncated or host-only status means",
          "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  // The golden run of a process killed mid-run: truncated, its stream cut.
  const std::string truncated =
      std::string(GPUATTR_SOURCE_DIR) + "/tests/golden/fault_crash/report.json";
  json host_only = json::parse(ReadFile(truncated));
  host_only["processes"][0]["status"] = "host_only";
  test_support::WriteFile(dir.File("host_only.json"), host_only.dump());
  for (const auto& [input, status, note] :
       {std::tuple<std::string, std::string, std::string>{truncated, "truncated",
                                                          "the stream ended without a Goodbye"},
        {dir.File("host_only.json"), "host only", "CUDA never started here"}}) {
    INFO(status);
    const std::string page = dir.File("page.html");
    std::remove(page.c_str());
    REQUIRE(ExitStatus(RunProcess({GPUATTR_BIN, "report", input, "--html", page})) == 0);
    const ProcessResult dom_run = RunChromium(dir, page, {"--dump-dom"});
    REQUIRE(ExitStatus(dom_run) == 0);
    CHECK(OverviewCards(dom_run.out)["status"] == status);
    CHECK_THAT(Block(dom_run.out, "overview"), Catch::Contains(note));
  }
}

TEST_CASE("The HTML report of a multi-rank run has the rank table and names the straggler",
          "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  const auto [report, truth] =
      RunScenario(dir, std::string(GPUATTR_SCENARIO_DIR) + "/four_ranks.json");
  const std::string page = dir.File("report.html");
  REQUIRE(ExitStatus(
              RunProcess({GPUATTR_BIN, "report", dir.File("report.json"), "--html", page})) == 0);
  const ProcessResult dom_run = RunChromium(dir, page, {"--window-size=800,1000", "--dump-dom"});
  INFO("chromium stderr: " << dom_run.err);
  REQUIRE(ExitStatus(dom_run) == 0);
  const std::string ranks = Block(dom_run.out, "ranks");
  REQUIRE_FALSE(ranks.empty());
  const json& summary = report["summary"];
  REQUIRE(summary["ranks"].size() == 4);
  for (const json& row : summary["ranks"]) {
    INFO("rank " << row["rank"]);
    CHECK(ranks.find(Ms(row["step_ns"])) != std::string::npos);
    CHECK(ranks.find(Ms(row["busy_ns"])) != std::string::npos);
    CHECK(ranks.find(Ms(row["idle_ns"])) != std::string::npos);
  }
  const size_t straggler = dom_run.out.find("Straggler: rank ");
  REQUIRE(straggler != std::string::npos);
  CHECK(dom_run.out.compare(straggler, 18,
                            "Straggler: rank " + summary["slowest"]["rank"].dump() + " ") == 0);
  const auto [laid_out, window] = LaidOutWidth(dom_run.out);
  CHECK(laid_out <= window);

  // A merged job's rows name two hosts (gpuattr merge): the host leads each row, still in 800 px.
  json merged = report;
  for (size_t i = 0; i < merged["summary"]["ranks"].size(); ++i) {
    merged["summary"]["ranks"][i]["host"] = i < 2 ? "node-a" : "node-b";
  }
  test_support::WriteFile(dir.File("merged.json"), merged.dump());
  const std::string merged_page = dir.File("merged.html");
  REQUIRE(ExitStatus(RunProcess(
              {GPUATTR_BIN, "report", dir.File("merged.json"), "--html", merged_page})) == 0);
  const ProcessResult merged_run =
      RunChromium(dir, merged_page, {"--window-size=800,1000", "--dump-dom"});
  REQUIRE(ExitStatus(merged_run) == 0);
  const std::string merged_ranks = Block(merged_run.out, "ranks");
  CHECK(merged_ranks.find(">host</th>") != std::string::npos);
  CHECK(merged_ranks.find("node-b") != std::string::npos);
  CHECK(ranks.find("node-b") == std::string::npos);  // one host: no column
  const auto [merged_width, merged_window] = LaidOutWidth(merged_run.out);
  CHECK(merged_width <= merged_window);
}

// A synthetic report: 10 roots x 10 x 100 = 10,110 passes, each with device time.
json TenThousandPassReport() {
  auto pass = [](const std::vector<std::string>& path, uint64_t self, json children) {
    uint64_t total = self;
    for (const json& child : children) total += child["device"]["total_ns"].get<uint64_t>();
    return json{
        {"name", path.back()},
        {"path", path},
        {"instances", 1},
        {"device", {{"self_ns", self}, {"total_ns", total}, {"busy_ns", self}, {"kernels", 1}}},
        {"phase", path.size() % 2 ? "forward" : "backward"},
        {"children", std::move(children)}};
  };
  json roots = json::array();
  uint64_t seed = 1;
  for (int a = 0; a < 10; ++a) {
    json level1 = json::array();
    for (int b = 0; b < 10; ++b) {
      json level2 = json::array();
      for (int c = 0; c < 100; ++c) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        level2.push_back(pass({"root" + std::to_string(a), "mid" + std::to_string(b),
                               "leaf" + std::to_string(a * 1000 + b * 100 + c)},
                              1000 + (seed >> 40) % 100000, json::array()));
      }
      level1.push_back(pass({"root" + std::to_string(a), "mid" + std::to_string(b)}, 500, level2));
    }
    roots.push_back(pass({"root" + std::to_string(a)}, 100, level1));
  }
  return json{
      {"schema_version", "gpuattr.report/1"},
      {"tool", {{"name", "gpuattr"}, {"version", "test"}}},
      {"processes", {{{"pid", 1}, {"rank", nullptr}, {"status", "complete"}, {"passes", roots}}}}};
}

TEST_CASE("The HTML report renders a 10,000-node pass tree, building only the rows it shows",
          "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  const json report = TenThousandPassReport();
  std::ofstream(dir.File("big.json")) << report.dump();
  const std::string page = dir.File("big.html");
  REQUIRE(ExitStatus(RunProcess({GPUATTR_BIN, "report", dir.File("big.json"), "--html", page})) ==
          0);
  const ProcessResult dom_run = RunChromium(dir, page, {"--dump-dom"});
  INFO("chromium stderr: " << dom_run.err);
  REQUIRE(ExitStatus(dom_run) == 0);
  const std::string& dom = dom_run.out;
  REQUIRE(dom.find("data-rendered=\"yes\"") != std::string::npos);
  const size_t ms_at = dom.find("data-render-ms=\"");
  REQUIRE(ms_at != std::string::npos);
  WARN("10,110-node pass tree rendered in "
       << dom.substr(ms_at + 16, dom.find('"', ms_at + 16) - ms_at - 16)
       << " ms (headless Chromium)");
  // The heaviest pass by self time is the first row; 50 rows are built, the rest on request.
  std::vector<const json*> passes;
  for (const json& root : report["processes"][0]["passes"]) CollectPasses(root, passes);
  const json* heaviest =
      *std::max_element(passes.begin(), passes.end(), [](const json* a, const json* b) {
        return (*a)["device"]["self_ns"] < (*b)["device"]["self_ns"];
      });
  const std::string block = Block(dom, "passes");
  CHECK(block.find((*heaviest)["name"].get<std::string>()) != std::string::npos);
  CHECK(dom.find("Show 50 more of " + std::to_string(passes.size() - 50)) != std::string::npos);
}

}  // namespace
}  // namespace gpuattr::e2e

namespace gpuattr::e2e {
namespace {

TEST_CASE(
    "The HTML report shows FLOPs, achieved FLOP/s, intensity as a hypothesis, MFU and the "
    "unknown ledger",
    "[visualization][html]") {
  RequireChromium();
  TempDir dir;
  // The golden nested-ranges run, with the FLOP counter's work on its first pass.
  json report = json::parse(
      ReadFile(std::string(GPUATTR_SOURCE_DIR) + "/tests/golden/nested_ranges/report.json"));
  json& process = report["processes"][0];
  json& pass = process["passes"][0];
  pass["work"] = {{"flops", 4'000'000'000},
                  {"flops_total", 4'000'000'000},
                  {"bytes_estimate", 2'000'000'000},
                  {"bytes_estimate_total", 2'000'000'000},
                  {"unknown_ops", 1},
                  {"unknown_ops_total", 1},
                  {"achieved_flops_per_s", 2e12},
                  {"arithmetic_intensity_hypothesis", 2.0}};
  process["work"] = {{"counter", "counting (rules: flop_rules.json)"},
                     {"refusal", nullptr},
                     {"flops", 4'000'000'000},
                     {"bytes_estimate", 2'000'000'000},
                     {"arithmetic_intensity_hypothesis", 2.0},
                     {"unattributed_flops", 0},
                     {"flops_by_dtype", {{"float32", 4'000'000'000}}},
                     {"ops",
                      {{"counted", json::array()},
                       {"free", json::array()},
                       {"unknown", {{{"op", "aten::erfinv"}, {"calls", 3}}}},
                       {"unknown_remedy", "Add a rule with --flop-rules FILE."}}},
                     {"achieved", {{"gate_passed", true}, {"refusal", nullptr}}},
                     {"mfu",
                      {{"value", 0.25},
                       {"step_flops", 1'000'000'000},
                       {"clean_step_ns", 4'000'000},
                       {"clean_step_source", "clean_run"},
                       {"clean_steps_timed", 5},
                       {"instrumented_step_ns", 4'500'000},
                       {"dtype", "float32"},
                       {"peak_flops_per_s", 1e12},
                       {"peak_source", "--peak-flops"},
                       {"refusal", nullptr}}}};
  const std::string input = dir.File("work.json");
  test_support::WriteFile(input, report.dump());
  const std::string page = dir.File("page.html");
  REQUIRE(ExitStatus(RunProcess({GPUATTR_BIN, "report", input, "--html", page})) == 0);
  const ProcessResult dom_run = RunChromium(dir, page, {"--dump-dom"});
  INFO("chromium stderr: " << dom_run.err);
  REQUIRE(ExitStatus(dom_run) == 0);
  const std::string work = Block(dom_run.out, "work");
  REQUIRE_FALSE(work.empty());
  CHECK_THAT(work, Catch::Contains("25.0 %"));     // MFU
  CHECK_THAT(work, Catch::Contains("4 GFLOP+"));   // a lower bound, marked
  CHECK_THAT(work, Catch::Contains("2 TFLOP/s"));  // achieved
  CHECK_THAT(work, Catch::Contains("arithmetic intensity (hypothesis)"));
  CHECK_THAT(work, Catch::Contains("never a denominator"));
  CHECK_THAT(Block(dom_run.out, "unknown-ops"), Catch::Contains("aten::erfinv"));
}

}  // namespace
}  // namespace gpuattr::e2e
