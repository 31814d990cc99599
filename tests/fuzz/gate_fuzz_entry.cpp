#include "gate_fuzz_entry.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "gate/gate.h"
#include "gate/rules.h"

namespace gpuattr::fuzz {

namespace {

using Json = nlohmann::json;

collector::LoadedReport LoadFixedReport(const char* name) {
  const std::string path = std::string(GPUATTR_FUZZ_GATE_REPORTS_DIR) + "/" + name;
  std::ifstream file(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  Json report = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!report.is_object()) {
    std::fprintf(stderr, "cannot load the fixed report %s\n", path.c_str());
    std::abort();
  }
  return collector::LoadedReport::FromDocument(std::move(report));
}

}  // namespace

bool EvaluateGateRulesBytes(const uint8_t* data, size_t size) {
  static const collector::LoadedReport baseline = LoadFixedReport("baseline.json");
  static const collector::LoadedReport current = LoadFixedReport("current.json");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return false;
  StatusOr<collector::GateRules> rules = collector::ParseGateRules(document, "'fuzz.json'");
  if (!rules.ok()) return false;
  StatusOr<collector::GateOutcome> outcome = collector::EvaluateGate(baseline, current, *rules);
  if (!outcome.ok()) return false;
  if (collector::RenderGateTable(*outcome).empty() ||
      collector::RenderGateMarkdown(*outcome).empty() ||
      collector::RenderGateJunit(*outcome).empty()) {
    std::abort();
  }
  if (!collector::GateOutcomeJson(*outcome).is_object()) std::abort();
  return true;
}

}  // namespace gpuattr::fuzz
