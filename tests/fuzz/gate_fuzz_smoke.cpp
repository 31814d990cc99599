// fuzz-smoke for gate rules (see fuzz_smoke.h): the tokens are JSON punctuation, rule keys and
// metric-path syntax.
#include <string>
#include <vector>

#include "fuzz_smoke.h"
#include "gate_fuzz_entry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> tokens = gpuattr::fuzz::JsonTokens(
      {"1e999", "-1", "0", "null", "[*]", "[rank=0]", "process[pid=4294967296].",
       "\"max_increase_pct\":", "\"min\":", "\"alpha\":", "\"metric\":\"families[*].total_ns\"",
       "[\"a\",\"b\"]", ".", "\xff"});
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::EvaluateGateRulesBytes, tokens);
}
