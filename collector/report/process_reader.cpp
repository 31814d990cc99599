// SummaryTermsOf (process_reader.h): each field read through a FieldReader that keeps the first
// failure with the field's path, so one pass reads the entry and one error names what was wrong.
#include "report/process_reader.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "analysis/phase.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

class FieldReader {
 public:
  // `value` at `path`, a count: an integer in [0, 2^64).
  uint64_t Count(const Json& value, const std::string& path) {
    if (IsCount(value)) return value.get<uint64_t>();
    Fail(path, "is not a non-negative integer");
    return 0;
  }
  // A signed integer of int64's range.
  int64_t Signed(const Json& value, const std::string& path) {
    if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<int64_t>();
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return value.get<int64_t>();
    }
    Fail(path, "is not an integer of 64 bits");
    return 0;
  }
  template <typename T>
  T Integer(const Json& value, const std::string& path) {
    if constexpr (std::is_signed_v<T>) {
      return Signed(value, path);
    } else {
      return Count(value, path);
    }
  }
  uint32_t Count32(const Json& value, const std::string& path) {
    const uint64_t count = Count(value, path);
    if (count <= std::numeric_limits<uint32_t>::max()) return static_cast<uint32_t>(count);
    Fail(path, "does not fit 32 bits");
    return 0;
  }
  std::string String(const Json& value, const std::string& path) {
    if (value.is_string()) return value.get<std::string>();
    Fail(path, "is not a string");
    return {};
  }
  // The elements of an array (none, and a failure, for anything else).
  const Json& Array(const Json& value, const std::string& path) {
    static const Json kEmpty = Json::array();
    if (value.is_array()) return value;
    Fail(path, "is not an array");
    return kEmpty;
  }
  const Json& Object(const Json& value, const std::string& path) {
    static const Json kEmpty = Json::object();
    if (value.is_object()) return value;
    Fail(path, "is not an object");
    return kEmpty;
  }
  // The member `key` of `object`, whose path is `at`.
  uint64_t Count(const Json& object, const char* key, const std::string& at) {
    return Count(Field(object, key), at + "." + key);
  }
  uint32_t Count32(const Json& object, const char* key, const std::string& at) {
    return Count32(Field(object, key), at + "." + key);
  }
  std::string String(const Json& object, const char* key, const std::string& at) {
    return String(Field(object, key), at + "." + key);
  }
  template <typename T>
  T Integer(const Json& object, const char* key, const std::string& at) {
    return Integer<T>(Field(object, key), at + "." + key);
  }
  void Fail(const std::string& path, const char* what) {
    if (!failure_) failure_ = path + " " + what;
  }
  const std::optional<std::string>& failure() const { return failure_; }

 private:
  std::optional<std::string> failure_;
};

std::string Indexed(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

template <typename T>
SampleSummary<T> ReadSampleSummary(FieldReader& read, const Json& stats, const std::string& path) {
  SampleSummary<T> summary;
  if (stats.is_null()) return summary;  // no samples
  read.Object(stats, path);
  summary.count = read.Count(stats, "count", path);
  if (summary.count == 0) read.Fail(path + ".count", "is 0 where null means no samples");
  summary.total = read.Integer<T>(stats, "total", path);
  summary.min = read.Integer<T>(stats, "min", path);
  summary.max = read.Integer<T>(stats, "max", path);
  const Json& median = Field(stats, "median");
  if (!median.is_null()) {
    summary.median = read.Integer<T>(median, path + ".median");
    const Json& exact = Field(stats, "median_exact");
    if (!exact.is_boolean()) read.Fail(path + ".median_exact", "is not a boolean");
    summary.median_exact = exact.is_boolean() && exact.get<bool>();
  }
  return summary;
}

std::array<uint32_t, 3> ReadDimensions(FieldReader& read, const Json& value,
                                       const std::string& path) {
  std::array<uint32_t, 3> dimensions{};
  const Json& elements = read.Array(value, path);
  if (elements.size() != 3) read.Fail(path, "does not have 3 elements");
  for (size_t i = 0; i < 3 && i < elements.size(); ++i) {
    dimensions[i] = read.Count32(elements[i], Indexed(path, i));
  }
  return dimensions;
}

FamilyStats ReadFamily(FieldReader& read, const Json& family, const std::string& path) {
  FamilyStats stats;
  stats.family = read.String(family, "family", path);
  stats.kernels = read.Count(family, "kernels", path);
  stats.total_ns = read.Count(family, "total_ns", path);
  stats.min_ns = read.Count(family, "min_ns", path);
  stats.max_ns = read.Count(family, "max_ns", path);
  const Json& names = read.Array(Field(family, "names"), path + ".names");
  for (size_t i = 0; i < names.size(); ++i) {
    stats.names.push_back(read.String(names[i], Indexed(path + ".names", i)));
  }
  if (stats.names.size() > kFamilyExamples) read.Fail(path + ".names", "holds too many examples");
  const Json& shapes = read.Array(Field(family, "shapes"), path + ".shapes");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string at = Indexed(path + ".shapes", i);
    ShapeStats shape;
    shape.shape.grid = ReadDimensions(read, Field(shapes[i], "grid"), at + ".grid");
    shape.shape.block = ReadDimensions(read, Field(shapes[i], "block"), at + ".block");
    shape.shape.shared_memory_bytes = read.Count32(shapes[i], "shared_memory_bytes", at);
    shape.kernels = read.Count(shapes[i], "kernels", at);
    shape.total_ns = read.Count(shapes[i], "total_ns", at);
    stats.shapes.push_back(shape);
  }
  const Json& launch = read.Object(Field(family, "launch"), path + ".launch");
  stats.launch_api =
      ReadSampleSummary<uint64_t>(read, Field(launch, "api_ns"), path + ".launch.api_ns");
  stats.launch_latency =
      ReadSampleSummary<int64_t>(read, Field(launch, "latency_ns"), path + ".launch.latency_ns");
  return stats;
}

void ReadCoverage(FieldReader& read, const Json& coverage, ProcessAnalysis& analysis) {
  read.Object(coverage, "coverage");
  analysis.attributed_kernel_ns = read.Count(coverage, "attributed_kernel_ns", "coverage");
  const Json& by_phase =
      read.Object(Field(coverage, "by_phase_kernel_ns"), "coverage.by_phase_kernel_ns");
  for (size_t i = 0; i < kPhaseCount; ++i) {
    const std::string phase = PhaseName(static_cast<Phase>(i));
    const std::string at = "coverage.by_phase_kernel_ns." + phase;
    const Json& terms = Field(by_phase, phase.c_str());
    analysis.phase_coverage.attributed_kernel_ns[i] = read.Count(terms, "attributed_kernel_ns", at);
    analysis.phase_coverage.unattributed_kernel_ns[i] =
        read.Count(terms, "unattributed_kernel_ns", at);
  }
  const Json& unattributed = read.Array(Field(coverage, "unattributed"), "coverage.unattributed");
  for (size_t i = 0; i < unattributed.size(); ++i) {
    const std::string at = Indexed("coverage.unattributed", i);
    const Json& entry = unattributed[i];
    analysis.unattributed.push_back({read.String(entry, "reason", at), read.Count(entry, "ns", at),
                                     read.Count(entry, "kernel_ns", at),
                                     read.Count(entry, "activities", at)});
  }
  const Json& fallbacks = read.Array(Field(coverage, "fallbacks"), "coverage.fallbacks");
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    const std::string at = Indexed("coverage.fallbacks", i);
    const Json& entry = fallbacks[i];
    analysis.fallbacks.push_back({read.String(entry, "reason", at), read.Count(entry, "ns", at),
                                  read.Count(entry, "activities", at)});
  }
}

}  // namespace

StatusOr<ProcessAnalysis> SummaryTermsOf(const Json& process, const std::string& where) {
  FieldReader read;
  ProcessAnalysis analysis;
  read.Object(process, "the entry");
  const std::string status = read.String(Field(process, "status"), "status");
  const ProcessStatus* known =
      std::find_if(std::begin(kProcessStatuses), std::end(kProcessStatuses),
                   [&](ProcessStatus candidate) { return status == ProcessStatusName(candidate); });
  if (known != std::end(kProcessStatuses)) {
    analysis.status = *known;
  } else {
    read.Fail("status", "is none of complete, truncated, refused, host_only");
  }
  // Device time was measured exactly where the report gives totals (report_json.h).
  const Json& totals = read.Object(Field(process, "totals"), "totals");
  analysis.device_measured = !Field(totals, "kernel_ns").is_null();
  if (analysis.device_measured) {
    Totals& into = analysis.totals;
    into.kernel_ns = read.Count(totals, "kernel_ns", "totals");
    into.memcpy_ns = read.Count(totals, "memcpy_ns", "totals");
    into.memset_ns = read.Count(totals, "memset_ns", "totals");
    into.kernels = read.Count(totals, "kernels", "totals");
    into.memcpys = read.Count(totals, "memcpys", "totals");
    into.memsets = read.Count(totals, "memsets", "totals");
    into.launches = read.Count(totals, "launches", "totals");
    ReadCoverage(read, Field(process, "coverage"), analysis);
    const Json& families = read.Array(Field(process, "families"), "families");
    for (size_t i = 0; i < families.size(); ++i) {
      analysis.families.push_back(ReadFamily(read, families[i], Indexed("families", i)));
    }
  }
  if (read.failure()) {
    return DataLossError(where + ": " + *read.failure() +
                         " (a report of another gpuattr version, or edited; write it again with "
                         "this gpuattr's run or import)");
  }
  return analysis;
}

}  // namespace gpuattr::collector
