#include "window_truth.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuattr::e2e {

namespace {

using nlohmann::json;

constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

uint64_t EndOf(const json& range) {
  return range["end_ns"].is_null() ? kOpen : range["end_ns"].get<uint64_t>();
}

bool PushPop(const json& range) { return range.value("kind", "push_pop") == "push_pop"; }

// The path of `thread`'s innermost push/pop range open at t ([start, end) holds t), [] when
// none. Ranges are in push order, so among those open at t the last pushed is the innermost.
std::vector<std::string> InnermostAt(const json& ranges, const std::string& thread, uint64_t t) {
  std::vector<std::string> path;
  for (const json& range : ranges) {
    if (!PushPop(range) || range["thread"] != thread) continue;
    if (range["start_ns"].get<uint64_t>() <= t && t < EndOf(range)) {
      path = range["path"].get<std::vector<std::string>>();
    }
  }
  return path;
}

enum class Capture { kBeforeWindow, kInsideWindow, kAmbiguous };

// When the capture behind a `captured` activity happened, relative to begin_ns (header comment).
Capture CaptureTime(const json& activity, const json& ranges, uint64_t first_launch_ns,
                    uint64_t begin_ns) {
  bool any = false;
  bool all_before = true;
  bool all_inside = true;
  for (const json& range : ranges) {
    if (!PushPop(range) || range["thread"] != activity["capture_thread"] ||
        range["path"] != activity["range_path"]) {
      continue;
    }
    const uint64_t start = range["start_ns"].get<uint64_t>();
    if (start >= first_launch_ns) continue;
    any = true;
    if (std::min(EndOf(range), first_launch_ns) > begin_ns) all_before = false;
    if (start < begin_ns) all_inside = false;
  }
  if (!any) return Capture::kAmbiguous;
  if (all_before) return Capture::kBeforeWindow;
  if (all_inside) return Capture::kInsideWindow;
  return Capture::kAmbiguous;
}

}  // namespace

json RestrictTruthToWindow(const json& truth, int64_t pid, uint64_t begin_ns, uint64_t end_ns) {
  json out = json::object();
  out["processes"] = json::array();
  for (const json& process : truth["processes"]) {
    if (process["pid"] != pid) continue;
    const json& ranges = process["ranges"];
    std::optional<std::string> main_thread;
    for (const json& range : ranges) {
      if (PushPop(range)) {
        main_thread = range["thread"].get<std::string>();
        break;
      }
    }
    std::map<int64_t, uint64_t> first_launch_by_graph;
    for (const json& activity : process["activities"]) {
      if (!activity.contains("graph_id") || !activity["graph_id"].is_number()) continue;
      const auto launch = activity["launch_ns"].get<uint64_t>();
      auto [it, inserted] =
          first_launch_by_graph.try_emplace(activity["graph_id"].get<int64_t>(), launch);
      if (!inserted) it->second = std::min(it->second, launch);
    }

    json restricted = process;
    restricted["activities"] = json::array();
    uint64_t ambiguous = 0;
    for (const json& activity : process["activities"]) {
      const auto launch = activity["launch_ns"].get<uint64_t>();
      if (launch < begin_ns || launch > end_ns) continue;
      json kept = activity;
      if (activity["attribution"] == "captured") {
        const uint64_t first_launch =
            activity.contains("graph_id") && activity["graph_id"].is_number()
                ? first_launch_by_graph.at(activity["graph_id"].get<int64_t>())
                : launch;
        switch (CaptureTime(activity, ranges, first_launch, begin_ns)) {
          case Capture::kInsideWindow:
            break;
          case Capture::kAmbiguous:
            ++ambiguous;
            break;
          case Capture::kBeforeWindow: {
            const std::string thread = activity["thread"].get<std::string>();
            std::vector<std::string> path = InnermostAt(ranges, thread, launch);
            std::string attribution = "direct";
            if (path.empty()) {
              attribution = "none";
              if (main_thread && *main_thread != thread) {
                path = InnermostAt(ranges, *main_thread, launch);
                if (!path.empty()) attribution = "inherited";
              }
            }
            kept["range_path"] = path;
            kept["attribution"] = attribution;
            break;
          }
        }
      }
      restricted["activities"].push_back(std::move(kept));
    }

    restricted["ranges"] = json::array();
    for (const json& range : ranges) {
      if (range["start_ns"].get<uint64_t>() >= begin_ns && EndOf(range) <= end_ns) {
        restricted["ranges"].push_back(range);
      }
    }
    if (process.contains("marks")) {
      restricted["marks"] = json::array();
      for (const json& mark : process["marks"]) {
        const auto ns = mark["ns"].get<uint64_t>();
        if (ns >= begin_ns && ns <= end_ns) restricted["marks"].push_back(mark);
      }
    }
    restricted["ambiguous_captures"] = ambiguous;
    out["processes"].push_back(std::move(restricted));
  }
  return out;
}

}  // namespace gpuattr::e2e
