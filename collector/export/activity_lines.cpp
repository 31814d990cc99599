#include "export/activity_lines.h"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

const char* KindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kKernel:
      return "kernel";
    case ActivityKind::kMemcpy:
      return "memcpy";
    case ActivityKind::kMemset:
      return "memset";
  }
  return "kernel";
}

}  // namespace

std::string ActivityLine(const ObservedActivity& observed) {
  const ActivityRecord& activity = *observed.activity;
  const LaunchRecord* launch = observed.launch;
  Json line;
  line["pid"] = observed.pid;
  line["kind"] = KindName(activity.kind);
  line["name"] = observed.kernel_name ? Json(*observed.kernel_name) : Json(nullptr);
  line["correlation_id"] = activity.correlation_id;
  line["device"] = activity.device;
  line["stream"] = activity.stream;
  line["start_ns"] = activity.start_ns;
  line["end_ns"] = activity.end_ns;
  line["launch_ns"] = launch ? Json(launch->enter_ns) : Json(nullptr);
  if (launch) {
    line["thread"] = observed.thread_name ? *observed.thread_name : std::to_string(launch->tid);
  } else {
    line["thread"] = nullptr;
  }
  line["path"] = *observed.path;
  line["attribution"] = AttributionKindName(observed.attribution);
  line["reason"] = observed.reason ? Json(observed.reason) : Json(nullptr);
  line["graph_node"] = activity.graph_node_id ? Json(activity.graph_node_id) : Json(nullptr);
  line["launch_path"] = observed.launch_path ? Json(*observed.launch_path) : Json(nullptr);
  line["phase"] = observed.phase ? Json(PhaseName(*observed.phase)) : Json(nullptr);
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

StatusOr<std::unique_ptr<ActivityLinesWriter>> ActivityLinesWriter::Create(const std::string& path,
                                                                           ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile file, AtomicTextFile::Create(path, existing));
  return std::unique_ptr<ActivityLinesWriter>(new ActivityLinesWriter(std::move(file)));
}

void ActivityLinesWriter::ActivityReleased(const ObservedActivity& activity) {
  buffer_ += ActivityLine(activity);
  buffer_.push_back('\n');
  if (buffer_.size() >= kFlushBytes) {
    file_.Append(buffer_);
    buffer_.clear();
  }
}

Status ActivityLinesWriter::Commit() {
  if (!buffer_.empty()) file_.Append(buffer_);
  buffer_.clear();
  return file_.Commit();
}

}  // namespace gpuattr::collector
