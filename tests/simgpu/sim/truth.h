// ProcessTruth: what one simulated process really did, recorded by simgpu-run itself, independent
// of any collector code: the NVTX ranges it opened (DESIGN §5 truth "ranges"), the device
// activities with their attribution (DESIGN §2 rules, computed from this bookkeeping), and marks.
//
// Stacks: one merged stack per scenario thread (all domains, push order), because DESIGN §2
// attributes to the innermost range on that stack; a domain pop closes the innermost open range
// of that domain. The "main thread" for inheritance is the first thread that pushed a range.
//
// Threads: every scenario thread records concurrently; mu_ (a leaf lock) guards everything, so an
// attribution sees the launching thread's and the main thread's stacks at one instant.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_TRUTH_H_
#define GPUATTR_TESTS_SIMGPU_SIM_TRUTH_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpuattr::simgpu {

// A host time, SimClock ns (the simulated driver's clock, before and after cuInit).
struct HostTime {
  uint64_t ns = 0;
};

struct Attribution {
  std::string kind;  // "direct", "inherited" or "none"
  std::vector<std::string> path;
};

class ProcessTruth {
 public:
  void Push(const std::string& thread, const std::string& name, const std::string& domain,
            HostTime t);
  // Closes the innermost open range of `domain` on `thread`; false when none was open.
  bool Pop(const std::string& thread, const std::string& domain, HostTime t);
  // The NVTX call behind `thread`'s latest Push or Pop returned at t. The shim stamps that
  // boundary inside the call, somewhere between the two readings ("start_returned_ns",
  // "end_returned_ns" in the JSON), so a comparison near it can allow for either.
  void BoundaryReturned(const std::string& thread, HostTime t);
  void RangeStart(const std::string& id, const std::string& thread, const std::string& name,
                  HostTime t);
  void RangeEnd(const std::string& id, HostTime t);
  void Mark(const std::string& thread, const std::string& name, HostTime t);

  // The merged stack of `thread` as names.
  std::vector<std::string> PathOf(const std::string& thread);
  // DESIGN §2 rules 1, 2 and 4 for work launched now by `thread`.
  Attribution Attribute(const std::string& thread);

  // Records one activity. With SIMGPU_TRUTH_ACTIVITIES=counts in the environment only its kind is
  // counted ("activity_counts"), so that benchmark runs of millions of kernels stay small; tests
  // that compare activities never set it.
  void AddActivity(nlohmann::json activity);

  // {"pid", "rank", "name", "activities", "ranges", "marks"}. Ranges still open have
  // "end_ns": null.
  nlohmann::json ToJson(int pid, std::optional<int> rank, const std::string& name);

  // After fork(), in the child: only the forking thread survives, now running `child_thread`'s
  // ops with the ranges it had open still open (NVTX tools see the same); nothing else is kept.
  void ForkChild(const std::string& forking_thread, const std::string& child_thread);

 private:
  struct Range {
    std::string thread;
    std::string domain;  // "" = default domain
    std::vector<std::string> path;
    std::string kind;  // "push_pop" or "start_end"
    HostTime start;
    std::optional<HostTime> end;
    std::optional<HostTime> start_returned;
    std::optional<HostTime> end_returned;
  };
  struct Boundary {
    size_t range_index;
    bool is_end;
  };
  struct Frame {
    std::string name;
    std::string domain;
    size_t range_index;
  };

  std::mutex mu_;
  std::map<std::string, std::vector<Frame>> stacks_;
  std::map<std::string, Boundary> last_boundary_;  // by thread: its latest push or pop
  std::optional<std::string> main_thread_;
  std::vector<Range> ranges_;
  std::map<std::string, size_t> open_start_end_;  // range_start id -> index in ranges_
  std::vector<nlohmann::json> activities_;
  std::map<std::string, uint64_t> activity_counts_;  // kind -> activities, in counts mode
  struct MarkRecord {
    std::string thread;
    std::string name;
    HostTime t;
  };
  std::vector<MarkRecord> marks_;
};

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_TRUTH_H_
