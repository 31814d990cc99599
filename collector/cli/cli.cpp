#include "cli/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/attach_command.h"
#include "cli/daemon_command.h"
#include "cli/diff_command.h"
#include "cli/export_command.h"
#include "cli/gate_command.h"
#include "cli/import_command.h"
#include "cli/merge_command.h"
#include "cli/report_command.h"
#include "cli/run.h"
#include "cli/subcommand.h"
#include "gpuattr_version.h"

namespace gpuattr::collector {
namespace {

constexpr char kFooter[] = R"(Examples:
  gpuattr run -- python train.py
  gpuattr run -o report.json -- python train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json
  gpuattr import -o report.json rank0.json.gz rank1.json.gz
  gpuattr report report.json
  gpuattr report --json report.json | jq '.processes[].coverage'
  gpuattr run --trace timeline.json --folded device.folded -- python train.py
  gpuattr report report.json --html report.html
  gpuattr export --perfetto timeline.json trace.json.gz
  gpuattr diff baseline.json current.json
  gpuattr gate --baseline baseline.json --current current.json --rules gate.json
  gpuattr daemon --reports-dir ~/.local/share/gpuattr/reports
  gpuattr run --armed -- python train.py
  gpuattr attach --pid 4242 --duration 30s -o window.json

Exit status: that of the profiled command for `run`; 2 usage, 3 bad input, 4 an output that
cannot be written (every command) or an internal error.
Environment: GPUATTR_INJECT_LIBRARY names the injection library when it is not found beside
the gpuattr executable.)";

}  // namespace

Status RefuseRepeatedFiles(const std::vector<std::string>& files, const std::string& why) {
  std::map<std::pair<dev_t, ino_t>, const std::string*> seen;
  for (const std::string& path : files) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    auto [earlier, inserted] = seen.try_emplace({info.st_dev, info.st_ino}, &path);
    if (!inserted) {
      return InvalidArgumentError(path + " is the same file as " + *earlier->second + ": " + why +
                                  "; give each file once");
    }
  }
  return Status::Ok();
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return kExitUsage;
    case StatusCode::kDataLoss:
      return kExitData;
    case StatusCode::kOk:  // not an error; callers only map errors, so this is a bug of ours
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kPermissionDenied:
    case StatusCode::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

bool WriteStdout(const char* subcommand, const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0) {
    return true;
  }
  std::fprintf(stderr, "gpuattr %s: cannot write to stdout: %s\n", subcommand,
               std::strerror(errno));
  return false;
}

bool ColourWanted(bool is_terminal, const char* no_color, const char* term) {
  if (!is_terminal) return false;
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

bool StdoutWantsColour() {
  return ColourWanted(isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"), std::getenv("TERM"));
}

std::string ColourVerdicts(const std::string& text) {
  static constexpr std::pair<const char*, const char*> kColours[] = {
      {"FAIL", "\x1b[1;31m"}, {"pass", "\x1b[32m"}, {"n/a", "\x1b[2m"}};
  constexpr char kReset[] = "\x1b[0m";
  constexpr char kHeader[] = "gpuattr gate: ";
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    end = end == std::string::npos ? text.size() : end + 1;
    std::string_view line(text.data() + begin, end - begin);
    const size_t prefix = line.rfind(kHeader, 0) == 0 ? sizeof(kHeader) - 1 : 0;
    bool coloured = false;
    for (const auto& [word, colour] : kColours) {
      const std::string_view rest = line.substr(prefix);
      const size_t length = std::strlen(word);
      if (rest.rfind(word, 0) == 0 && rest.size() > length &&
          (rest[length] == ' ' || rest[length] == '\n')) {
        out.append(line.substr(0, prefix));
        out += colour;
        out += word;
        out += kReset;
        out.append(rest.substr(length));
        coloured = true;
        break;
      }
    }
    if (!coloured) out.append(line);
    begin = end;
  }
  return out;
}

int ExitWithOutput(const char* subcommand, const StatusOr<std::string>& output) {
  if (!output.ok()) {
    std::fprintf(stderr, "gpuattr %s: %s\n", subcommand, output.status().message().c_str());
    return ExitCodeFor(output.status());
  }
  return WriteStdout(subcommand, *output) ? 0 : kExitInternal;
}

namespace {

// `app`'s help, its usage line naming gpuattr (CLI11 names only a subcommand that was not parsed).
std::string HelpOf(const CLI::App& app) {
  std::string help = app.help();
  const std::string bare = "Usage: " + app.get_name() + " ";
  if (app.get_parent() != nullptr && help.find(bare) != std::string::npos) {
    help.replace(help.find(bare), bare.size(), "Usage: gpuattr " + app.get_name() + " ");
  }
  return help;
}

// The "Usage: ..." line of `app`'s help, for parse errors.
std::string UsageLine(const CLI::App& app) {
  const std::string help = HelpOf(app);
  const size_t at = help.find("Usage: ");
  if (at == std::string::npos) return "";
  const size_t end = help.find('\n', at);
  return help.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string SubcommandNames(const std::vector<Subcommand>& subcommands) {
  std::string names;
  for (const Subcommand& subcommand : subcommands) {
    names += (names.empty() ? "" : ", ") + subcommand.app->get_name();
  }
  return names;
}

const Subcommand* FindSubcommand(const std::vector<Subcommand>& subcommands,
                                 const std::string& name) {
  for (const Subcommand& subcommand : subcommands) {
    if (subcommand.app->get_name() == name) return &subcommand;
  }
  return nullptr;
}

// `gpuattr help [SUBCOMMAND]`: the help of gpuattr or of SUBCOMMAND, on stdout.
int PrintHelp(const CLI::App& app, const std::vector<Subcommand>& subcommands, int argc,
              char** argv) {
  if (argc <= 2) return WriteStdout("help", app.help()) ? 0 : kExitInternal;
  const Subcommand* subcommand = FindSubcommand(subcommands, argv[2]);
  if (subcommand == nullptr || argc > 3) {
    std::fprintf(stderr, "gpuattr help: %s (usage: gpuattr help [SUBCOMMAND]; subcommands: %s)\n",
                 argc > 3 ? "one subcommand at a time"
                          : ("unknown subcommand '" + std::string(argv[2]) + "'").c_str(),
                 SubcommandNames(subcommands).c_str());
    return kExitUsage;
  }
  return WriteStdout("help", HelpOf(*subcommand->app)) ? 0 : kExitInternal;
}

}  // namespace

int GpuattrMain(int argc, char** argv) {
  // CLI11 can only report through exceptions; they end here, at the parse.
  try {
    CLI::App app{"gpuattr: which part of a program owns the GPU time, and where the GPU is idle.",
                 "gpuattr"};
    app.set_version_flag("--version", "gpuattr " GPUATTR_VERSION);
    app.require_subcommand(1);
    app.footer(kFooter);
    const std::vector<Subcommand> subcommands = {
        AddRunSubcommand(app),    AddImportSubcommand(app), AddMergeSubcommand(app),
        AddReportSubcommand(app), AddDiffSubcommand(app),   AddGateSubcommand(app),
        AddExportSubcommand(app), AddDaemonSubcommand(app), AddAttachSubcommand(app)};

    // --version wherever it comes before CMD (run's command keeps its own).
    for (const Subcommand& subcommand : subcommands) {
      subcommand.app->set_version_flag("--version", "gpuattr " GPUATTR_VERSION);
    }
    const std::string names = SubcommandNames(subcommands);
    if (argc > 1 && std::string(argv[1]) == "help") return PrintHelp(app, subcommands, argc, argv);
    if (argc > 1 && argv[1][0] != '-' && FindSubcommand(subcommands, argv[1]) == nullptr) {
      std::fprintf(stderr, "gpuattr: unknown subcommand '%s' (subcommands: %s; see gpuattr help)\n",
                   argv[1], names.c_str());
      return kExitUsage;
    }
    if (argc > 1 && argv[1][0] == '-') {
      const std::string option = argv[1];
      if (option != "-h" && option != "--help" && option != "--version") {
        std::fprintf(stderr,
                     "gpuattr: unknown option '%s'\nUsage: gpuattr [--help | --version] "
                     "SUBCOMMAND [OPTIONS] (subcommands: %s; gpuattr help SUBCOMMAND)\n",
                     option.c_str(), names.c_str());
        return kExitUsage;
      }
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      if (error.get_exit_code() == 0) return app.exit(error);  // help and version, on stdout
      // The error names what was wrong (an unknown flag by name); then the usage line of the
      // subcommand it was for.
      const CLI::App* failed = &app;
      for (const Subcommand& subcommand : subcommands) {
        if (subcommand.app->parsed()) failed = subcommand.app;
      }
      const std::string who = failed == &app ? "gpuattr" : "gpuattr " + failed->get_name();
      std::fprintf(stderr, "%s: %s\n%s (gpuattr help%s)\n", who.c_str(), error.what(),
                   UsageLine(*failed).c_str(),
                   failed == &app ? "" : (" " + failed->get_name()).c_str());
      return kExitUsage;
    }
    for (const Subcommand& subcommand : subcommands) {
      if (subcommand.app->parsed()) return subcommand.run();
    }
    std::fprintf(stderr, "gpuattr: no subcommand (see gpuattr --help)\n");
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpuattr: internal error: %s\n", error.what());
    return kExitInternal;
  }
}

}  // namespace gpuattr::collector
