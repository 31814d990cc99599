#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace gpuattr::internal {

void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "gpuattr: GPUATTR_CHECK failed: %s (%s:%d)\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gpuattr::internal
