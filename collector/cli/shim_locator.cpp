#include "cli/shim_locator.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpuattr::collector {
namespace {

namespace fs = std::filesystem;

enum class EntryKind { kFile, kDirectory };

// The real path of `path` when it names an entry of `kind` (or a link to one), else nothing.
std::string RealPathOf(const fs::path& path, EntryKind kind) {
  std::error_code error;
  const bool found =
      kind == EntryKind::kFile ? fs::is_regular_file(path, error) : fs::is_directory(path, error);
  if (!found) return {};
  fs::path real = fs::canonical(path, error);
  return error ? std::string() : real.string();
}

// `what` (named `entry` beside the executable: `build_tree` and `installed` relative to the
// executable's directory), or the path `env_name`=`env_value` chooses when it is set.
StatusOr<std::string> LocateBesideExecutable(std::string_view what, EntryKind kind,
                                             const char* env_name, const char* env_value,
                                             const std::string& exe_path,
                                             const fs::path& build_tree,
                                             const fs::path& installed) {
  if (env_value != nullptr && env_value[0] != '\0') {
    std::string found = RealPathOf(env_value, kind);
    if (found.empty()) {
      return NotFoundError(std::string(env_name) + "=" + env_value + " does not name " +
                           (kind == EntryKind::kFile ? "a file" : "a directory"));
    }
    return found;
  }
  const fs::path exe_dir = fs::path(exe_path).parent_path();
  std::string looked_at;
  for (const fs::path& candidate : {exe_dir / build_tree, exe_dir / installed}) {
    std::string found = RealPathOf(candidate, kind);
    if (!found.empty()) return found;
    looked_at += (looked_at.empty() ? "" : ", ") + candidate.lexically_normal().string();
  }
  return NotFoundError("cannot find " + std::string(what) + " (looked at " + looked_at + "); set " +
                       env_name + " to its path");
}

StatusOr<std::string> ExecutablePath() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return InternalError("cannot read /proc/self/exe: " + error.message());
  return exe.string();
}

}  // namespace

StatusOr<std::string> LocateShimFrom(const char* env_value, const std::string& exe_path) {
  return LocateBesideExecutable(std::string("the injection library ") + kShimFileName,
                                EntryKind::kFile, kInjectLibraryEnv, env_value, exe_path,
                                fs::path("..") / "inject" / kShimFileName,
                                fs::path("..") / "lib" / "gpuattr" / kShimFileName);
}

StatusOr<std::string> LocateShim() {
  GPUATTR_ASSIGN_OR_RETURN(const std::string exe, ExecutablePath());
  return LocateShimFrom(std::getenv(kInjectLibraryEnv), exe);
}

StatusOr<std::string> LocatePythonSiteFrom(const char* env_value, const std::string& exe_path) {
  return LocateBesideExecutable(
      std::string("the Python annotator's directory ") + kPythonSiteDirName, EntryKind::kDirectory,
      kPythonSiteEnv, env_value, exe_path, fs::path("..") / "python" / kPythonSiteDirName,
      fs::path("..") / "lib" / "gpuattr" / kPythonSiteDirName);
}

StatusOr<std::string> LocatePythonSite() {
  GPUATTR_ASSIGN_OR_RETURN(const std::string exe, ExecutablePath());
  return LocatePythonSiteFrom(std::getenv(kPythonSiteEnv), exe);
}

}  // namespace gpuattr::collector
