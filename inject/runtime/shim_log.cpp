#include "runtime/shim_log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuattr::inject {
namespace {

std::atomic<bool> g_enabled{false};
std::atomic<int> g_lines{0};

}  // namespace

void InitShimLog() noexcept {
  const char* value = getenv("GPUATTR_LOG");
  g_enabled.store(value != nullptr && strcmp(value, "1") == 0, std::memory_order_relaxed);
}

void SetShimLogEnabled(bool enabled) noexcept {
  g_enabled.store(enabled, std::memory_order_relaxed);
}

void ShimLog(const char* format, ...) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  const int line = g_lines.fetch_add(1, std::memory_order_relaxed);
  if (line > kMaxLogLines) return;
  char buffer[512];
  int used = snprintf(buffer, sizeof(buffer), "[gpuattr] ");
  if (line == kMaxLogLines) {
    used += snprintf(buffer + used, sizeof(buffer) - static_cast<size_t>(used),
                     "log limit reached; further messages are suppressed");
  } else {
    va_list args;
    va_start(args, format);
    const int n =
        vsnprintf(buffer + used, sizeof(buffer) - static_cast<size_t>(used), format, args);
    va_end(args);
    if (n > 0) used += n;
  }
  if (used > static_cast<int>(sizeof(buffer)) - 2) used = static_cast<int>(sizeof(buffer)) - 2;
  buffer[used++] = '\n';
  // A failed write to stderr is not worth reporting anywhere else.
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, buffer, static_cast<size_t>(used));
}

}  // namespace gpuattr::inject
