// The issue-3 report contract (docs/attribution.md) derived from a simulator ground truth,
// independently of the collector: each activity's attribution, reason and phase; per-process phase
// terms, coverage (overall and by phase) and unattributed time by reason; per-device gap classes
// and holes; and the step rows. truth_compare.h covers counts, passes and device unions; this
// covers the rest. Host times come from the truth's own clock readings: a scenario must keep
// every launch and range boundary well away (tens of µs) from the instants it is compared with,
// since the shim reads the clock a few µs apart from the simulator. Gaps are the exception, as
// their starts are device times that can fall anywhere: the truth brackets each launch and push
// or pop between a reading before the call and one after it returned, and a gap that starts
// inside that bracket may take either side (`class_ambiguous`, `host_range_candidates`).
// Single-threaded test code.
#ifndef GPUATTR_TESTS_E2E_CONTRACT_EXPECT_H_
#define GPUATTR_TESTS_E2E_CONTRACT_EXPECT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuattr::e2e {

using Path = std::vector<std::string>;

// The phase terms of docs/attribution.md §Phases, in report order.
inline const std::vector<std::string> kPhaseTerms = {
    "forward", "backward", "recompute", "optimizer", "loss", "communication", "other"};

// One hole in a device's busy union, classified by the activity that ends it.
struct ContractGap {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string gap_class;  // host_bound or dependency
  // The ending activity's launch call bracketed start_ns: the shim's stamp of it may fall on
  // either side, so either class is right.
  bool class_ambiguous = false;
  // The ending activity's launch thread's stack at start_ns, as the truth's readings before the
  // NVTX calls put it and as its readings after them do (equal unless a push or pop bracketed
  // start_ns); the shim's lies between, so either is right.
  std::vector<Path> host_range_candidates;
};

struct ContractDevice {
  uint64_t host_bound_ns = 0;      // certainly host-bound
  uint64_t dependency_ns = 0;      // certainly dependency
  uint64_t ambiguous_ns = 0;       // in gaps with class_ambiguous: either, gap by gap
  std::vector<ContractGap> holes;  // largest first (ties: earlier first)
};

// One row of the steps table. host_ns is the truth's reading (the shim's own readings of the same
// push and pop differ by µs); everything else is device time and exact.
struct ContractStepRow {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t host_ns = 0;
  uint64_t busy_ns = 0;
  std::map<std::string, uint64_t> ns;  // each of kPhaseTerms and "unattributed"
};

struct ContractSteps {
  std::string range;
  std::vector<ContractStepRow> rows;  // every instance, before --skip-steps
};

// What the --activities export must say about one truth activity.
struct ContractActivity {
  nlohmann::json truth;               // the truth's activity object
  std::string attribution;            // direct, inherited, captured or none
  Path path;                          // [] when none
  std::optional<std::string> reason;  // set exactly when none
  std::optional<std::string> phase;
};

struct ContractProcess {
  int64_t pid = 0;
  uint64_t device_ns = 0;  // all activity time
  uint64_t kernel_ns = 0;
  uint64_t attributed_kernel_ns = 0;
  std::map<std::string, uint64_t> phase_ns;         // each of kPhaseTerms
  std::map<std::string, uint64_t> phase_kernel_ns;  // attributed kernel time by its phase
  // Unattributed kernel time by the phase of the main thread's stack at its launch.
  std::map<std::string, uint64_t> phase_unattributed_kernel_ns;
  std::map<std::string, std::pair<uint64_t, uint64_t>> unattributed;  // reason -> {ns, count}
  std::map<int64_t, ContractDevice> devices;
  std::optional<ContractSteps> steps;
  std::vector<ContractActivity> activities;
};

struct ContractOptions {
  bool inherit = true;              // false: as `gpuattr run --no-inherit`
  std::optional<std::string> step;  // as `--step NAME`; unset: auto-detect
};

// Derives the contract for every process of a truth document.
std::vector<ContractProcess> ExpectContract(const nlohmann::json& truth,
                                            const ContractOptions& options = {});

// The phase of a range path under the default phase rules; nullopt for none.
std::optional<std::string> PhaseOfPath(const Path& path);

// {lower median, upper median} of the values (equal for an odd count).
std::pair<uint64_t, uint64_t> MedianBounds(std::vector<uint64_t> values);

// abi::__cxa_demangle of an Itanium-mangled name; any other name is returned unchanged.
std::string Demangle(const std::string& name);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_CONTRACT_EXPECT_H_
