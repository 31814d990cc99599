// Kept kernel maps: `gpuattr run --kernel-maps FILE` keeps the compiled graphs' kernel maps that
// the Python annotator wrote during the run (one <pid>.jsonl per process in the run's private
// directory, analysis/kernel_maps.h) in FILE, so that `gpuattr import --kernel-maps FILE` can
// place the launches of a torch.profiler trace of the same program by module (docs/pytorch.md
// §Compiled models). The lines are copied as written: the reader checks every one.
// Main thread, after the run.
#ifndef GPUATTR_COLLECTOR_CLI_KEPT_KERNEL_MAPS_H_
#define GPUATTR_COLLECTOR_CLI_KEPT_KERNEL_MAPS_H_

#include <string>

#include "base/status.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

// Before the run: `path` expanded as every output of the command is (output_names.h: %p, %q{VAR},
// %n; refused if it exists unless `existing` replaces it) and checked writable (CheckOutputPath);
// `pytorch_mode` must not be "off" (no annotator, no maps), and "-" is no file.
Status ResolveKeptKernelMaps(std::string* path, ExistingFile existing,
                             const std::string& pytorch_mode);

// After the run: every process's complete map lines in `maps_dir` (in pid order; at most
// KernelMaps::kMaxBytes in all) written atomically to `path`; a run that compiled nothing keeps
// an empty file.
Status KeepKernelMaps(const std::string& maps_dir, const std::string& path, ExistingFile existing);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_KEPT_KERNEL_MAPS_H_
