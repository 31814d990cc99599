#include "runtime/clock.h"

#include <dlfcn.h>

namespace gpuattr::inject {
namespace {

HostClock AskProcessForClock() noexcept {
  using Query = HostClock (*)();
  auto query = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "gpuattr_host_clock"));
  return query != nullptr ? query() : nullptr;
}

}  // namespace

const HostClock kProcessHostClock = AskProcessForClock();

}  // namespace gpuattr::inject
