// The gpuattr command line: the parse, the dispatch to the subcommand it chose (each command
// file adds its own, with its flags: subcommand.h), and the mapping from Status to exit status.
// collector/main.cpp calls GpuattrMain and nothing else; everything else lives in libraries so
// tests can link it. Runs on the main thread.
//
// Exit statuses of gpuattr itself (a subcommand that runs a command, like `run`, passes that
// command's status through instead):
//   0  success, or --help / --version
//   2  usage: a bad flag or value, an unknown subcommand, a missing command, no shim found
//   3  input or data: a named input is malformed
//   4  an output that cannot be written, or internal: gpuattr failed (socket, spawn)
#ifndef GPUATTR_COLLECTOR_CLI_CLI_H_
#define GPUATTR_COLLECTOR_CLI_CLI_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr int kExitUsage = 2;
inline constexpr int kExitData = 3;
inline constexpr int kExitInternal = 4;

// kInvalidArgument and kNotFound: 2; kDataLoss: 3; anything else: 4. Never 0: callers only map
// errors.
int ExitCodeFor(const Status& status);

// Writes `text` to stdout; false, with a message naming `subcommand`, when it cannot.
bool WriteStdout(const char* subcommand, const std::string& text);

// Whether output to a stream should be coloured: it is a terminal, NO_COLOR is unset or empty
// (no-color.org), and TERM is not "dumb". `no_color` and `term` are the variables' values (null:
// unset).
bool ColourWanted(bool is_terminal, const char* no_color, const char* term);
// ColourWanted for stdout, from this process's environment.
bool StdoutWantsColour();

// `text` with the verdict words that begin its lines (and the "gpuattr gate: " header) in ANSI
// colour: FAIL bold red, pass green, n/a dim. The rest of each line is left as it is.
std::string ColourVerdicts(const std::string& text);

// A subcommand's ending when its output is text: the text on stdout and 0, or the error on stderr
// ("gpuattr SUBCOMMAND: ...") and its exit code.
int ExitWithOutput(const char* subcommand, const StatusOr<std::string>& output);

// kInvalidArgument when two of `files` are one file (the same device and inode, by any path),
// with `why` once is the rule; a file stat cannot read is left for its reader to report. For the
// commands that read several inputs (import, merge), where one file twice would count its
// processes twice.
Status RefuseRepeatedFiles(const std::vector<std::string>& files, const std::string& why);

// Parses argv, runs the subcommand and returns the process's exit status. Nothing goes to stdout
// except --help and --version; messages go to stderr, prefixed "gpuattr: ".
int GpuattrMain(int argc, char** argv);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_CLI_H_
