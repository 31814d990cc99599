// Output names, with Nsight Systems' conventions, for every file `run`, `import`, `export` and
// `attach` write (the report and the exports), so that one command line serves every rank and
// node of a job writing to shared storage:
//   %p        the pid of this gpuattr process (known before CMD starts, unique on its host)
//   %h        the host name
//   %q{VAR}   the value of environment variable VAR (RANK, SLURM_PROCID, ...); unset is an error,
//             never an empty string that would make two ranks one file
//   %n        the smallest number from 1 up that makes the name one no file has yet
//   %%        a literal %
// An existing file is never replaced unless the command has --force-overwrite (a character device
// or FIFO, such as /dev/null, is written in place and does not count as existing): the name is
// refused before any work starts, and the report is published with a link that fails rather
// than replace a file that appeared meanwhile (atomic_write.h, ExistingFile::kRefuse).
// "-" (standard output) is left as it is, for the commands that accept it.
//
// Pure but for the file-system probes of %n and of the existence check; main thread.
#ifndef GPUATTR_COLLECTOR_CLI_OUTPUT_NAMES_H_
#define GPUATTR_COLLECTOR_CLI_OUTPUT_NAMES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "export/exports.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

struct OutputNameContext {
  uint32_t pid = 0;
  std::string host;
  std::function<std::optional<std::string>(const std::string&)> env;  // VAR -> value, if set
  std::function<bool(const std::string&)> exists;                     // a file has this name
};

// This process's context: getpid(), gethostname(), getenv, lstat.
OutputNameContext ProcessOutputNameContext();

// What publishing does with an existing file: replace it only when --force-overwrite was given.
ExistingFile ExistingFileFor(bool force_overwrite);

// `pattern` expanded. kInvalidArgument (usage) for an unknown %-directive or an unset %q
// variable; kFailedPrecondition (an output that cannot be written) for an expanded name that
// exists while `existing` is kRefuse. `what` names the option in messages ("the report path
// (-o)"). "-" comes back unchanged.
StatusOr<std::string> ExpandOutputName(const std::string& pattern, const std::string& what,
                                       ExistingFile existing, const OutputNameContext& context);

// A command's outputs, resolved before it starts work: the report path (null: the command writes
// no report) and every export path expanded in place, each refused if it exists, unless
// `force_overwrite`. Returns what publishing
// does with existing files (also set in exports->existing). The report path "-" is standard
// output where `report_to_stdout` (a command whose stdout is its own), else refused, like "-" for
// any export.
StatusOr<ExistingFile> ResolveOutputNames(std::string* report_path, ExportPaths* exports,
                                          bool force_overwrite, bool report_to_stdout,
                                          const OutputNameContext& context);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_OUTPUT_NAMES_H_
