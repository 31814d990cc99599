// Output names (cli/output_names.h): %p %h %q{VAR} %n %% expand, existing names are refused
// unless forced, "-" is standard output only for the report of a command that owns its stdout;
// and the publishing side (report/atomic_write.h): ExistingFile::kRefuse leaves a file that
// appeared meanwhile as it was.
#include "cli/output_names.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "report/atomic_write.h"
#include "test_files.h"

namespace gpuattr::collector {
namespace {

OutputNameContext FakeContext(const std::set<std::string>* taken) {
  OutputNameContext context;
  context.pid = 4242;
  context.host = "node7";
  context.env = [](const std::string& name) -> std::optional<std::string> {
    static const std::map<std::string, std::string> kEnv = {{"RANK", "3"}, {"EMPTY", ""}};
    auto value = kEnv.find(name);
    if (value == kEnv.end()) return std::nullopt;
    return value->second;
  };
  context.exists = [taken](const std::string& path) { return taken->count(path) > 0; };
  return context;
}

std::string Expanded(const std::string& pattern, const std::set<std::string>& taken = {},
                     ExistingFile existing = ExistingFile::kRefuse) {
  StatusOr<std::string> name = ExpandOutputName(pattern, "-o", existing, FakeContext(&taken));
  REQUIRE(name.ok());
  return *name;
}

// The message of a refused name; `code`: the status expected.
std::string Refusal(const std::string& pattern, const std::set<std::string>& taken = {},
                    StatusCode code = StatusCode::kInvalidArgument) {
  StatusOr<std::string> name =
      ExpandOutputName(pattern, "-o", ExistingFile::kRefuse, FakeContext(&taken));
  REQUIRE_FALSE(name.ok());
  CHECK(name.status().code() == code);
  return name.status().message();
}

TEST_CASE("Output names expand pid, host, variables and a literal percent", "[cli][outputs]") {
  CHECK(Expanded("out/%h-%p-rank%q{RANK}.json") == "out/node7-4242-rank3.json");
  CHECK(Expanded("100%%-%q{EMPTY}.json") == "100%-.json");
  CHECK(Expanded("plain.json") == "plain.json");
  CHECK(Expanded("-") == "-");
}

TEST_CASE("%n is the smallest number that names no file yet", "[cli][outputs]") {
  CHECK(Expanded("report%n.json") == "report1.json");
  CHECK(Expanded("report%n.json", {"report1.json", "report2.json", "report4.json"}) ==
        "report3.json");
  // Every %n of a name is the same number.
  CHECK(Expanded("r%n/r%n.json", {"r1/r1.json"}) == "r2/r2.json");
}

TEST_CASE("Existing names are refused unless replacing was asked for", "[cli][outputs]") {
  const std::string message =
      Refusal("report.json", {"report.json"}, StatusCode::kFailedPrecondition);
  CHECK(message.find("'report.json' exists") != std::string::npos);
  CHECK(message.find("--force-overwrite") != std::string::npos);
  CHECK(Expanded("report.json", {"report.json"}, ExistingFile::kReplace) == "report.json");
}

TEST_CASE("Malformed directives and unset variables are refused with their cause",
          "[cli][outputs]") {
  CHECK(Refusal("r%x.json").find("unknown %x") != std::string::npos);
  CHECK(Refusal("r%.json").find("unknown %.") != std::string::npos);
  CHECK(Refusal("r%").find("lone %") != std::string::npos);
  CHECK(Refusal("r%q{SLURM_PROCID}.json").find("SLURM_PROCID is not set") != std::string::npos);
  for (const char* pattern : {"r%q.json", "r%q{}.json", "r%q{RANK"}) {
    INFO(pattern);
    CHECK(Refusal(pattern).find("%q takes a variable in braces") != std::string::npos);
  }
}

TEST_CASE("A command's outputs resolve together, and standard output is for reports only",
          "[cli][outputs]") {
  const std::set<std::string> taken = {"t1.json"};
  std::string report = "r-%q{RANK}.json";
  ExportPaths exports;
  exports.trace = "t%n.json";
  exports.folded = "f-%p.folded";
  StatusOr<ExistingFile> existing =
      ResolveOutputNames(&report, &exports, /*force_overwrite=*/false,
                         /*report_to_stdout=*/false, FakeContext(&taken));
  REQUIRE(existing.ok());
  CHECK(*existing == ExistingFile::kRefuse);
  CHECK(exports.existing == ExistingFile::kRefuse);
  CHECK(report == "r-3.json");
  CHECK(exports.trace == "t2.json");
  CHECK(exports.folded == "f-4242.folded");
  CHECK(exports.speedscope.empty());

  std::string to_stdout = "-";
  ExportPaths none;
  CHECK_FALSE(
      ResolveOutputNames(&to_stdout, &none, false, /*report_to_stdout=*/false, FakeContext(&taken))
          .ok());
  existing = ResolveOutputNames(&to_stdout, &none, /*force_overwrite=*/true,
                                /*report_to_stdout=*/true, FakeContext(&taken));
  REQUIRE(existing.ok());
  CHECK(*existing == ExistingFile::kReplace);
  CHECK(to_stdout == "-");
  ExportPaths trace_to_stdout;
  trace_to_stdout.trace = "-";
  const StatusOr<ExistingFile> refused =
      ResolveOutputNames(nullptr, &trace_to_stdout, false, true, FakeContext(&taken));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("--trace") != std::string::npos);
}

TEST_CASE("Publishing without replacing leaves a file that appeared meanwhile as it was",
          "[cli][outputs]") {
  test_support::TempDir dir;
  const std::string path = dir.File("report.json");
  StatusOr<AtomicTextFile> file = AtomicTextFile::Create(path, ExistingFile::kRefuse);
  REQUIRE(file.ok());
  file->Append("ours\n");
  std::ofstream(path) << "theirs\n";  // another rank given the same name, finished first
  const Status status = file->Commit();
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kFailedPrecondition);
  CHECK(status.message().find("left as it was") != std::string::npos);
  CHECK(test_support::ReadFile(path) == "theirs\n");
  CHECK(dir.Entries() == std::vector<std::string>{"report.json"});  // no temporary file left

  const std::string fresh = dir.File("fresh.json");
  REQUIRE(WriteTextAtomically("new\n", fresh, ExistingFile::kRefuse).ok());
  CHECK(test_support::ReadFile(fresh) == "new\n");
  CHECK_FALSE(WriteTextAtomically("again\n", fresh, ExistingFile::kRefuse).ok());
  CHECK(test_support::ReadFile(fresh) == "new\n");
  REQUIRE(WriteTextAtomically("again\n", fresh, ExistingFile::kReplace).ok());
  CHECK(test_support::ReadFile(fresh) == "again\n");
}

TEST_CASE("A FIFO or a device as the output is written in place, never replaced",
          "[cli][outputs]") {
  test_support::TempDir dir;
  const std::string pipe = dir.File("pipe");
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  // Not "existing" for the no-overwrite rule: a reader is waiting on it, as on /dev/stdout.
  StatusOr<std::string> name =
      ExpandOutputName(pipe, "-o", ExistingFile::kRefuse, ProcessOutputNameContext());
  REQUIRE(name.ok());
  CHECK(*name == pipe);
  StatusOr<AtomicTextFile> file = AtomicTextFile::Create(pipe, ExistingFile::kRefuse);
  REQUIRE(file.ok());
  file->Append("through the pipe\n");
  REQUIRE(file->Commit().ok());
  char text[64] = {};
  CHECK(::read(reader, text, sizeof(text) - 1) == 17);
  CHECK(std::string(text) == "through the pipe\n");
  ::close(reader);
  struct stat info {};
  REQUIRE(::stat(pipe.c_str(), &info) == 0);
  CHECK(S_ISFIFO(info.st_mode));  // still the FIFO, not a file renamed onto it
  CHECK(dir.Entries() == std::vector<std::string>{"pipe"});

  // Nobody reads it now: refused at once with the remedy, where open(2) would wait for ever.
  StatusOr<AtomicTextFile> unread = AtomicTextFile::Create(pipe, ExistingFile::kRefuse);
  REQUIRE_FALSE(unread.ok());
  CHECK(unread.status().code() == StatusCode::kFailedPrecondition);
  CHECK(unread.status().message().find("a FIFO that no process reads") != std::string::npos);
  CHECK(unread.status().message().find("start the reader first") != std::string::npos);
  REQUIRE(::stat(pipe.c_str(), &info) == 0);
  CHECK(S_ISFIFO(info.st_mode));
}

}  // namespace
}  // namespace gpuattr::collector
