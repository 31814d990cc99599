#include "runtime/clock.h"

#include <dlfcn.h>

namespace gpuattr::inject {

HostClock process_host_clock = nullptr;

namespace {

// Before every other initialiser and constructor of the shim (those run at the default priority),
// so that nothing is stamped before the answer: the library constructor may start a session.
__attribute__((constructor(101))) void AskProcessForClock() noexcept {
  using Query = HostClock (*)();
  auto query = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "gpuattr_host_clock"));
  process_host_clock = query != nullptr ? query() : nullptr;
}

}  // namespace
}  // namespace gpuattr::inject
