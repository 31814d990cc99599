// Output names as a user meets them (cli/output_names.h, docs/jobs.md): the real executable,
// `run` and `import`, in a directory of the test's own. A second run to a name is refused and
// leaves the first report; --force-overwrite replaces it; the default name and %n number the
// reports; %h %p %q{RANK} expand; `import -o -` writes the report to stdout.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::component {
namespace {

using test_support::ProcessResult;
using test_support::ReadFile;
using test_support::RunProcess;
using test_support::TempDir;

const char* const kTrace = GPUATTR_SOURCE_DIR "/tests/data/pytorch_checkpointed.json";

// `gpuattr ARGS...` run from `dir` (a shell changes into it first).
ProcessResult GpuattrIn(const TempDir& dir, const std::string& args,
                        const std::map<std::string, std::string>& env = {}) {
  return RunProcess({"/bin/sh", "-c", "cd '" + dir.path() + "' && '" GPUATTR_BINARY "' " + args},
                    env);
}

int ExitCode(const ProcessResult& result) { return result.exited ? result.exit_code : -1; }

TEST_CASE("gpuattr run never replaces a report unasked, and --force-overwrite does",
          "[run][outputs]") {
  TempDir dir;
  REQUIRE(ExitCode(GpuattrIn(dir, "run -q -o report.json -- /bin/true")) == 0);
  const std::string first = ReadFile(dir.File("report.json"));
  REQUIRE_FALSE(first.empty());

  const ProcessResult again = GpuattrIn(dir, "run -q -o report.json -- /bin/echo ran");
  INFO("stderr: " << again.err);
  CHECK(ExitCode(again) == 4);  // an output that cannot be written
  CHECK_THAT(again.err,
             Catch::Contains("'report.json' exists") && Catch::Contains("--force-overwrite"));
  CHECK(again.out.empty());  // refused before CMD started
  CHECK(ReadFile(dir.File("report.json")) == first);

  const ProcessResult forced =
      GpuattrIn(dir, "run -q --force-overwrite -o report.json -- /bin/echo ran");
  CHECK(ExitCode(forced) == 0);
  CHECK(forced.out == "ran\n");
  CHECK(ReadFile(dir.File("report.json")) != first);  // its capture.command differs
}

TEST_CASE("The default report name and %n number the reports of successive runs",
          "[run][outputs]") {
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    const ProcessResult result = GpuattrIn(dir, "run -- /bin/true");
    INFO("stderr: " << result.err);
    REQUIRE(ExitCode(result) == 0);
    CHECK_THAT(result.err,
               Catch::Contains("report written to gpuattr-report" + std::to_string(run + 1)));
  }
  CHECK(std::filesystem::exists(dir.File("gpuattr-report1.json")));
  CHECK(std::filesystem::exists(dir.File("gpuattr-report2.json")));
  REQUIRE(ExitCode(GpuattrIn(dir, "run -q -o 'job-%n.json' --trace 't%n.json' -- /bin/true")) == 0);
  CHECK(std::filesystem::exists(dir.File("job-1.json")));
  CHECK(std::filesystem::exists(dir.File("t1.json")));
}

TEST_CASE("Report names expand the host, the pid and an environment variable", "[run][outputs]") {
  TempDir dir;
  const ProcessResult result =
      GpuattrIn(dir, "run -q -o 'r-%h-%q{RANK}-%p.json' -- /bin/true", {{"RANK", "5"}});
  INFO("stderr: " << result.err);
  REQUIRE(ExitCode(result) == 0);
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  const std::vector<std::string> entries = dir.Entries();
  REQUIRE(entries.size() == 1);
  const std::string prefix = "r-" + std::string(host) + "-5-";
  CHECK(entries[0].rfind(prefix, 0) == 0);
  const std::string pid = entries[0].substr(prefix.size(), entries[0].size() - prefix.size() - 5);
  CHECK_FALSE(pid.empty());
  CHECK(pid.find_first_not_of("0123456789") == std::string::npos);

  const ProcessResult unset =
      GpuattrIn(dir, "run -q -o 'r-%q{GPUATTR_TEST_UNSET}.json' -- /bin/true");
  CHECK(ExitCode(unset) == 2);
  CHECK_THAT(unset.err, Catch::Contains("GPUATTR_TEST_UNSET is not set"));
}

TEST_CASE("gpuattr import writes the report to stdout for -o -, and run refuses it",
          "[import][outputs]") {
  TempDir dir;
  const ProcessResult imported = GpuattrIn(dir, std::string("import -o - ") + kTrace);
  INFO("stderr: " << imported.err);
  REQUIRE(ExitCode(imported) == 0);
  const nlohmann::json report = nlohmann::json::parse(imported.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(report["capture"]["mode"] == "import");
  CHECK(dir.Entries().empty());  // no file named "-"
  CHECK(imported.err.find("report written to") == std::string::npos);

  const ProcessResult run = GpuattrIn(dir, "run -o - -- /bin/true");
  CHECK(ExitCode(run) == 2);
  CHECK_THAT(run.err, Catch::Contains("standard output"));
  CHECK(dir.Entries().empty());
}

}  // namespace
}  // namespace gpuattr::component
