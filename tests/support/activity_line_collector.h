// ActivityLineCollector: a TraceObserver that keeps the --activities lines
// (export/activity_lines.h) of every process in release order, as one string, for tests that
// compare them. Header-only, so test_support needs no collector library; its users link the
// collector's export library. Single-threaded: the folding thread calls it.
#ifndef GPUATTR_TESTS_SUPPORT_ACTIVITY_LINE_COLLECTOR_H_
#define GPUATTR_TESTS_SUPPORT_ACTIVITY_LINE_COLLECTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trace_observer.h"
#include "export/activity_lines.h"

namespace gpuattr::collector::testing {

class ActivityLineCollector : public TraceObserver {
 public:
  void RangeClosed(uint32_t, const HostRange&, const std::vector<std::string>&) override {}
  void LaunchDone(uint32_t, uint32_t, const LaunchRecord&) override {}
  void ActivityReleased(const ObservedActivity& activity) override {
    text += ActivityLine(activity) + "\n";
  }
  void ProcessFinished(const TraceData&, const ProcessAnalysis&) override {}

  std::string text;  // one line per released activity, each ending in "\n"
};

}  // namespace gpuattr::collector::testing

#endif  // GPUATTR_TESTS_SUPPORT_ACTIVITY_LINE_COLLECTOR_H_
