#include "cli/shim_locator.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace gpuattr::collector {
namespace {

namespace fs = std::filesystem;

// The real path of `path` when it names a regular file (or a link to one), else nothing.
std::string RegularFileRealPath(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return {};
  fs::path real = fs::canonical(path, error);
  return error ? std::string() : real.string();
}

}  // namespace

StatusOr<std::string> LocateShimFrom(const char* env_value, const std::string& exe_path) {
  if (env_value != nullptr && env_value[0] != '\0') {
    std::string found = RegularFileRealPath(env_value);
    if (found.empty()) {
      return NotFoundError(std::string(kInjectLibraryEnv) + "=" + env_value +
                           " does not name a file");
    }
    return found;
  }
  const fs::path exe_dir = fs::path(exe_path).parent_path();
  const std::vector<fs::path> candidates = {
      exe_dir / ".." / "inject" / kShimFileName,           // build tree
      exe_dir / ".." / "lib" / "gpuattr" / kShimFileName,  // installed
  };
  std::string looked_at;
  for (const fs::path& candidate : candidates) {
    std::string found = RegularFileRealPath(candidate);
    if (!found.empty()) return found;
    looked_at += (looked_at.empty() ? "" : ", ") + candidate.lexically_normal().string();
  }
  return NotFoundError(std::string("cannot find the injection library ") + kShimFileName +
                       " (looked at " + looked_at + "); set " + kInjectLibraryEnv + " to its path");
}

StatusOr<std::string> LocateShim() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return InternalError("cannot read /proc/self/exe: " + error.message());
  return LocateShimFrom(std::getenv(kInjectLibraryEnv), exe.string());
}

}  // namespace gpuattr::collector
