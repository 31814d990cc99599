#include "report_fuzz_entry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "report/report_reader.h"
#include "views/report_view.h"

namespace gpuattr::fuzz {

namespace {

// The memfd's path, created once; the file is rewritten for every input.
struct MemoryFile {
  int fd = -1;
  std::string path;
};

const MemoryFile& Memfd() {
  static const MemoryFile file = [] {
    MemoryFile created;
    created.fd = ::memfd_create("gpuattr-report-fuzz", MFD_CLOEXEC);
    if (created.fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    created.path = "/proc/self/fd/" + std::to_string(created.fd);
    return created;
  }();
  return file;
}

}  // namespace

bool RenderReportBytes(const uint8_t* data, size_t size) {
  using namespace collector;
  const MemoryFile& file = Memfd();
  if (::ftruncate(file.fd, 0) != 0 ||
      ::pwrite(file.fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::perror("writing the memfd");
    std::abort();
  }
  StatusOr<LoadedReport> report = LoadReport(file.path);
  if (!report.ok()) {
    if (report.status().code() != StatusCode::kDataLoss) {
      std::fprintf(stderr, "LoadReport failed with a non-data error: %s\n",
                   report.status().message().c_str());
      std::abort();
    }
    return false;
  }
  ReportViewOptions options;
  if (RenderReportView(*report, options).empty()) std::abort();
  options.top = 1;
  const nlohmann::json& document = report->document();
  const auto processes = document.find("processes");
  if (processes != document.end() && processes->is_array() && !processes->empty() &&
      processes->front().is_object()) {
    const auto pid = processes->front().find("pid");
    if (pid != processes->front().end() && pid->is_number_unsigned()) {
      options.pid = pid->get<uint64_t>();
    }
  }
  if (RenderReportView(*report, options).empty()) std::abort();
  return true;
}

}  // namespace gpuattr::fuzz
