#include "cli/output_names.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "base/os.h"

namespace gpuattr::collector {
namespace {

// Past this many taken numbers %n gives up: a directory with a million reports of one name is a
// loop of ours or a hostile directory, not a job.
constexpr uint64_t kMaxNumber = 1'000'000;

// `pattern` with `number` for %n; *uses_number says whether it has one.
StatusOr<std::string> ExpandOnce(const std::string& pattern, const std::string& what,
                                 uint64_t number, const OutputNameContext& context,
                                 bool* uses_number) {
  std::string out;
  for (size_t at = 0; at < pattern.size(); ++at) {
    if (pattern[at] != '%') {
      out.push_back(pattern[at]);
      continue;
    }
    if (++at == pattern.size()) {
      return InvalidArgumentError(what + " '" + pattern + "' ends in a lone %: write %% for a %");
    }
    switch (pattern[at]) {
      case '%':
        out.push_back('%');
        break;
      case 'p':
        out += std::to_string(context.pid);
        break;
      case 'h':
        out += context.host;
        break;
      case 'n':
        *uses_number = true;
        out += std::to_string(number);
        break;
      case 'q': {
        const size_t close = pattern.find('}', at);
        if (at + 1 >= pattern.size() || pattern[at + 1] != '{' || close == std::string::npos ||
            close == at + 2) {
          return InvalidArgumentError(what + " '" + pattern +
                                      "': %q takes a variable in braces, as in %q{RANK}");
        }
        const std::string variable = pattern.substr(at + 2, close - at - 2);
        const std::optional<std::string> value = context.env(variable);
        if (!value) {
          return InvalidArgumentError(what + " '" + pattern + "' names %q{" + variable + "}, but " +
                                      variable + " is not set");
        }
        out += *value;
        at = close;
        break;
      }
      default:
        return InvalidArgumentError(what + " '" + pattern + "' has an unknown %" +
                                    std::string(1, pattern[at]) + " (known: %p %h %q{VAR} %n %%)");
    }
  }
  return out;
}

}  // namespace

OutputNameContext ProcessOutputNameContext() {
  OutputNameContext context;
  context.pid = static_cast<uint32_t>(::getpid());
  context.host = HostName();
  if (context.host.empty()) context.host = "localhost";
  context.env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  context.exists = [](const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && !IsWrittenInPlace(info.st_mode);
  };
  return context;
}

ExistingFile ExistingFileFor(bool force_overwrite) {
  return force_overwrite ? ExistingFile::kReplace : ExistingFile::kRefuse;
}

StatusOr<std::string> ExpandOutputName(const std::string& pattern, const std::string& what,
                                       ExistingFile existing, const OutputNameContext& context) {
  if (pattern == "-") return pattern;
  for (uint64_t number = 1; number <= kMaxNumber; ++number) {
    bool uses_number = false;
    GPUATTR_ASSIGN_OR_RETURN(std::string name,
                             ExpandOnce(pattern, what, number, context, &uses_number));
    if (!context.exists(name)) return name;
    if (uses_number) continue;
    if (existing == ExistingFile::kReplace) return name;
    return FailedPreconditionError(
        what + " '" + name +
        "' exists, and gpuattr never replaces a file unasked: pass "
        "--force-overwrite, or put %n in the name for the next free one");
  }
  return InvalidArgumentError(what + " '" + pattern + "': numbers 1 to " +
                              std::to_string(kMaxNumber) + " are all taken");
}

StatusOr<ExistingFile> ResolveOutputNames(std::string* report_path, ExportPaths* exports,
                                          bool force_overwrite, bool report_to_stdout,
                                          const OutputNameContext& context) {
  const ExistingFile existing = ExistingFileFor(force_overwrite);
  if (report_path != nullptr) {
    if (*report_path == "-" && !report_to_stdout) {
      return InvalidArgumentError(
          "-o - (standard output) is not for this command: its standard output is not its own");
    }
    GPUATTR_ASSIGN_OR_RETURN(
        *report_path, ExpandOutputName(*report_path, "the report path (-o)", existing, context));
  }
  for (auto [path, option] : {std::pair{&exports->trace, "--trace"},
                              {&exports->folded, "--folded"},
                              {&exports->speedscope, "--speedscope"},
                              {&exports->activities, "--activities"}}) {
    if (path->empty()) continue;
    if (*path == "-") {
      return InvalidArgumentError(std::string(option) +
                                  " - : standard output is for the report (-o -) only");
    }
    GPUATTR_ASSIGN_OR_RETURN(*path, ExpandOutputName(*path, option, existing, context));
  }
  exports->existing = existing;
  return existing;
}

}  // namespace gpuattr::collector
