#include "cli/kept_kernel_maps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "analysis/kernel_maps.h"
#include "base/os.h"
#include "cli/output_names.h"

namespace gpuattr::collector {

Status ResolveKeptKernelMaps(std::string* path, ExistingFile existing,
                             const std::string& pytorch_mode) {
  constexpr char kWhat[] = "the kernel maps path (--kernel-maps)";
  if (pytorch_mode == "off") {
    return InvalidArgumentError(
        "--kernel-maps needs the Python annotator, which writes the maps (--pytorch is off)");
  }
  if (*path == "-") {
    return InvalidArgumentError("--kernel-maps - : standard output is for the report (-o -) only");
  }
  GPUATTR_ASSIGN_OR_RETURN(*path,
                           ExpandOutputName(*path, kWhat, existing, ProcessOutputNameContext()));
  return CheckOutputPath(*path, kWhat);
}

Status KeepKernelMaps(const std::string& maps_dir, const std::string& path, ExistingFile existing) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(maps_dir, error)) {
    if (entry.is_regular_file(error) && entry.path().extension() == ".jsonl") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile out, AtomicTextFile::Create(path, existing));
  uint64_t left = KernelMaps::kMaxBytes;
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string text;
    text.resize(left);
    in.read(text.data(), static_cast<std::streamsize>(left));
    text.resize(static_cast<size_t>(in.gcount()));
    // Complete lines only: a process killed while writing leaves half a line.
    const size_t last_newline = text.rfind('\n');
    text.resize(last_newline == std::string::npos ? 0 : last_newline + 1);
    left -= text.size();
    out.Append(text);
  }
  return out.Commit();
}

}  // namespace gpuattr::collector
