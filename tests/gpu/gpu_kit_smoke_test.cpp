// The real-GPU kit on a machine without a GPU (docs/gpu-validation.md): it must refuse cleanly,
// and every cupti_questions child must run its workload and its whole analysis to a JSON answer
// when CUDA fails under it, here against the simulated GPU's fake CUPTI (which subscribes, so the
// analysis runs past the subscription) with the real CUDA runtime failing for want of a driver.
// Keeps the kit from rotting between the rare sessions that are lent a GPU. On a machine with a
// GPU the same programs run for real; the assertions then hold the answers' shape only.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "subprocess.h"

namespace {

using gpuattr::test_support::ProcessResult;
using gpuattr::test_support::RunProcess;
using nlohmann::json;

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(json::parse(line, nullptr, false));
  return lines;
}

// One question's child, against the fake CUPTI.
ProcessResult RunQuestion(const std::string& question) {
  return RunProcess({CUPTI_QUESTIONS, "--question", question},
                    {{"LD_LIBRARY_PATH", FAKE_CUPTI_DIR}}, 60);
}

TEST_CASE("cupti_questions refuses with exit 3 without a GPU, or answers all eleven questions",
          "[gpu-kit]") {
  const ProcessResult run = RunProcess({CUPTI_QUESTIONS}, {}, 300);
  INFO(run.err);
  REQUIRE(run.exited);
  if (run.exit_code == 3) {
    CHECK(run.out.empty());
    CHECK(run.err.find("no CUDA device") != std::string::npos);
    return;
  }
  REQUIRE(run.exit_code == 0);
  const std::vector<json> lines = JsonLines(run.out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["answers"].size() == 11);
}

TEST_CASE(
    "each cupti_questions child runs its analysis to one JSON answer when CUDA fails under it",
    "[gpu-kit]") {
  const std::string question =
      GENERATE(as<std::string>{}, "launch_callbacks", "memcpy_correlation", "graphs", "graph_trace",
               "completed", "buffer_threads", "register_twice", "reattach", "nvtx_chain");
  INFO(question);
  const ProcessResult run = RunQuestion(question);
  INFO(run.err);
  REQUIRE(run.exited);
  CHECK(run.exit_code == 0);
  const std::vector<json> lines = JsonLines(run.out);
  REQUIRE(lines.size() == 1);
  REQUIRE_FALSE(lines[0].is_discarded());
  CHECK(lines[0]["question"] == question);
  REQUIRE(lines[0]["errors"].is_array());
  // Without a driver the first CUDA call fails, and says so; the fake CUPTI's subscribe does not.
  const std::string errors = lines[0]["errors"].dump();
  CHECK(errors.find("cuptiSubscribe") == std::string::npos);
}

TEST_CASE("the nvtx_slot child prints its answer, then a line of its own after nvtxNameOsThreadA",
          "[gpu-kit]") {
  const ProcessResult run = RunQuestion("nvtx_slot");
  INFO(run.err);
  REQUIRE(run.exited);
  CHECK(run.exit_code == 0);
  const std::vector<json> lines = JsonLines(run.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["subscribe_result"] == 0);
  CHECK(lines[1]["name_os_thread_survived"] == true);
}

}  // namespace
