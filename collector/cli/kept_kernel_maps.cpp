#include "cli/kept_kernel_maps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "analysis/kernel_maps.h"
#include "base/os.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

Status CheckKeptKernelMaps(const std::string& path, bool force_overwrite,
                           const std::string& pytorch_mode) {
  if (pytorch_mode == "off") {
    return InvalidArgumentError(
        "--kernel-maps needs the Python annotator, which writes the maps (--pytorch is off)");
  }
  GPUATTR_RETURN_IF_ERROR(CheckOutputPath(path, "the kernel maps path (--kernel-maps)"));
  std::error_code error;
  if (!force_overwrite && std::filesystem::exists(path, error)) {
    return FailedPreconditionError(path + " exists (--force-overwrite replaces it)");
  }
  return Status::Ok();
}

Status KeepKernelMaps(const std::string& maps_dir, const std::string& path, bool force_overwrite) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(maps_dir, error)) {
    if (entry.is_regular_file(error) && entry.path().extension() == ".jsonl") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile out,
                           AtomicTextFile::Create(path, force_overwrite ? ExistingFile::kReplace
                                                                        : ExistingFile::kRefuse));
  uint64_t left = KernelMaps::kMaxBytes;
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string text;
    text.resize(left);
    in.read(text.data(), static_cast<std::streamsize>(left));
    text.resize(static_cast<size_t>(in.gcount()));
    // Complete lines only: a process killed while writing leaves half a line.
    text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    left -= text.size();
    out.Append(text);
  }
  return out.Commit();
}

}  // namespace gpuattr::collector
