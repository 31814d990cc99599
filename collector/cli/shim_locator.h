// Finds what `gpuattr run` puts into the traced command: libgpuattr_inject.so, the shim it
// preloads, and gpuattr_site/, the directory of the Python annotator (python/, docs/pytorch.md)
// it puts first on PYTHONPATH.
//
// Order, for each: an environment variable (GPUATTR_INJECT_LIBRARY, GPUATTR_PYTHON_SITE; an
// explicit choice: when it is set and names nothing, that is an error, not a reason to look
// elsewhere); then beside the running executable, first as laid out in the build tree
// (<exe dir>/../inject/libgpuattr_inject.so, <exe dir>/../python/gpuattr_site), then as installed
// (<exe dir>/../lib/gpuattr/<name>). The result is an absolute, real path, because every process
// of the traced job resolves LD_PRELOAD and PYTHONPATH from its own cwd.
// Called on the main thread before the command starts.
#ifndef GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_
#define GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_

#include <string>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr char kInjectLibraryEnv[] = "GPUATTR_INJECT_LIBRARY";
inline constexpr char kShimFileName[] = "libgpuattr_inject.so";
inline constexpr char kPythonSiteEnv[] = "GPUATTR_PYTHON_SITE";
inline constexpr char kPythonSiteDirName[] = "gpuattr_site";

// `env_value`: GPUATTR_INJECT_LIBRARY's value, nullptr when unset. `exe_path`: the path of the
// running gpuattr executable. kNotFound, naming every place looked at, when there is no shim.
StatusOr<std::string> LocateShimFrom(const char* env_value, const std::string& exe_path);

// LocateShimFrom with the real environment and /proc/self/exe.
StatusOr<std::string> LocateShim();

// The Python annotator's directory, the same way (GPUATTR_PYTHON_SITE's value, nullptr when unset).
StatusOr<std::string> LocatePythonSiteFrom(const char* env_value, const std::string& exe_path);
StatusOr<std::string> LocatePythonSite();

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_SHIM_LOCATOR_H_
