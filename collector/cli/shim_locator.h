// Finds libgpuattr_inject.so, the shim `gpuattr run` preloads into the traced command.
//
// Order: the GPUATTR_INJECT_LIBRARY environment variable (an explicit choice: when it is set and
// names no file, that is an error, not a reason to look elsewhere); then beside the running
// executable, first as laid out in the build tree (<exe dir>/../inject/libgpuattr_inject.so), then
// as installed (<exe dir>/../lib/gpuattr/libgpuattr_inject.so). The result is an absolute, real
// path, because every process of the traced job resolves LD_PRELOAD from its own cwd.
// Called on the main thread before the command starts.
#ifndef GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_
#define GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_

#include <string>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr char kInjectLibraryEnv[] = "GPUATTR_INJECT_LIBRARY";
inline constexpr char kShimFileName[] = "libgpuattr_inject.so";

// `env_value`: GPUATTR_INJECT_LIBRARY's value, nullptr when unset. `exe_path`: the path of the
// running gpuattr executable. kNotFound, naming every place looked at, when there is no shim.
StatusOr<std::string> LocateShimFrom(const char* env_value, const std::string& exe_path);

// LocateShimFrom with the real environment and /proc/self/exe.
StatusOr<std::string> LocateShim();

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_
