// Expected numbers derived from a simulator ground truth (DESIGN §5), independently of the
// collector: per process, activity counts, the pass tree's self/total per path, and per-device
// span/busy/idle as interval unions. End-to-end tests compare a report against these exactly.
#ifndef GPUATTR_TESTS_E2E_TRUTH_COMPARE_H_
#define GPUATTR_TESTS_E2E_TRUTH_COMPARE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpuattr::e2e {

struct ExpectedDevice {
  uint64_t span_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
};

struct ExpectedPass {
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;
  std::map<std::string, uint64_t> ns_by_attribution;  // direct / inherited / captured
};

struct ExpectedProcess {
  int64_t pid = 0;
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t kernel_ns = 0;
  uint64_t memcpy_ns = 0;
  uint64_t memset_ns = 0;
  uint64_t unattributed_ns = 0;
  std::map<int64_t, ExpectedDevice> devices;                // by device id
  std::map<std::vector<std::string>, ExpectedPass> passes;  // by path, every prefix present
};

// Derives the expectation for every process in a truth document.
std::vector<ExpectedProcess> ExpectFromTruth(const nlohmann::json& truth);

// Flattens a report process's pass tree into path -> pass object.
std::map<std::vector<std::string>, nlohmann::json> FlattenPasses(const nlohmann::json& process);

// Length of the union of half-open intervals.
uint64_t UnionLength(std::vector<std::pair<uint64_t, uint64_t>> intervals);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_TRUTH_COMPARE_H_
