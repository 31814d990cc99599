// `gpuattr run` as a user runs it: the real executable, real child processes, real signals.
// GPUATTR_BINARY, GPUATTR_FAKE_TRACED_PROCESS and GPUATTR_SOURCE_DIR come from
// tests/component/CMakeLists.txt, GPUATTR_VERSION from the generated gpuattr_version.h; the shim
// is found by gpuattr itself, in the build tree.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/child_process.h"
#include "cli/shim_locator.h"
#include "gpuattr_version.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::component {
namespace {

using test_support::ChildrenOf;
using test_support::CommandName;
using test_support::MonotonicSeconds;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::SchemaCheck;
using test_support::Subprocess;
using test_support::TempDir;
using test_support::ValidateReport;

namespace fs = std::filesystem;

std::vector<std::string> Gpuattr(std::vector<std::string> args) {
  args.insert(args.begin(), GPUATTR_BINARY);
  return args;
}

// scripts/validate_report.py against schemas/report.schema.json.
void RequireValidReport(const std::string& path) {
  const SchemaCheck check = ValidateReport(path);
  INFO("validate_report.py: " << check.output);
  REQUIRE(check.valid);
}

}  // namespace

TEST_CASE("gpuattr run -- /bin/true exits 0 and writes a report that validates", "[run]") {
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const ProcessResult result = RunProcess(Gpuattr({"run", "-o", report_path, "--", "/bin/true"}));
  INFO("stderr: " << result.err);
  REQUIRE(result.exited);
  CHECK(result.exit_code == 0);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, Catch::Contains("report written to " + report_path));
  RequireValidReport(report_path);
  const nlohmann::json report = ReadJson(report_path);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(report["capture"]["mode"] == "run");
  CHECK(report["capture"]["command"] == nlohmann::json::array({"/bin/true"}));
  CHECK(report["processes"].empty());  // /bin/true never initialises CUDA nor calls NVTX
}

TEST_CASE("gpuattr run passes the command's exit status through", "[run]") {
  TempDir dir;
  SECTION("an exit code") {
    const ProcessResult result = RunProcess(
        Gpuattr({"run", "-q", "-o", dir.File("r.json"), "--", "/bin/sh", "-c", "exit 7"}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 7);
    CHECK(fs::exists(dir.File("r.json")));
  }
  SECTION("death by a signal is 128 + the signal") {
    const ProcessResult result = RunProcess(
        Gpuattr({"run", "-q", "-o", dir.File("r.json"), "--", "/bin/sh", "-c", "kill -9 $$"}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 128 + SIGKILL);
  }
}

TEST_CASE("the command's stdout is exactly what it is without gpuattr", "[run]") {
  TempDir dir;
  const ProcessResult alone = RunProcess({"/bin/echo", "hello"});
  const ProcessResult traced =
      RunProcess(Gpuattr({"run", "-o", dir.File("r.json"), "--", "/bin/echo", "hello"}));
  REQUIRE(traced.exited);
  CHECK(traced.exit_code == 0);
  CHECK(alone.out == "hello\n");
  CHECK(traced.out == alone.out);
  CHECK_FALSE(traced.err.empty());  // the summary, on stderr
}

TEST_CASE("gpuattr run runs a Python interpreter with the shim preloaded", "[run]") {
  TempDir dir;
  const ProcessResult result =
      RunProcess(Gpuattr({"run", "-o", dir.File("r.json"), "--", "python3", "-c", "print(1)"}));
  INFO("stderr: " << result.err);
  REQUIRE(result.exited);
  CHECK(result.exit_code == 0);
  CHECK(result.out == "1\n");
  RequireValidReport(dir.File("r.json"));
}

TEST_CASE("the command's own flags are its own, with or without --", "[run]") {
  TempDir dir;
  const ProcessResult result = RunProcess(
      Gpuattr({"run", "-q", "-o", dir.File("r.json"), "/bin/sh", "-c", "echo $0 -o", "x"}));
  REQUIRE(result.exited);
  CHECK(result.exit_code == 0);
  CHECK(result.out == "x -o\n");
}

TEST_CASE("SIGINT and SIGTERM sent to gpuattr reach the command and gpuattr still reports",
          "[run][signals]") {
  const int signal_number = GENERATE(SIGTERM, SIGINT);
  TempDir dir;
  Subprocess gpuattr(Gpuattr({"run", "-o", dir.File("r.json"), "--", "sleep", "30"}));
  // Signal only once the command runs: before that, gpuattr would not have it to forward to.
  pid_t sleeper = -1;
  const double deadline = MonotonicSeconds() + 10;
  while (sleeper < 0 && MonotonicSeconds() < deadline) {
    for (pid_t child : ChildrenOf(gpuattr.pid())) {
      if (CommandName(child) == "sleep") sleeper = child;
    }
    if (sleeper < 0) usleep(10000);
  }
  REQUIRE(sleeper > 0);
  const double sent_at = MonotonicSeconds();
  REQUIRE(kill(gpuattr.pid(), signal_number) == 0);
  const ProcessResult result = gpuattr.Wait(20);
  INFO("stderr: " << result.err);
  REQUIRE(result.exited);
  CHECK(result.exit_code == 128 + signal_number);
  CHECK(MonotonicSeconds() - sent_at < 3.0);
  CHECK(fs::exists(dir.File("r.json")));
}

TEST_CASE("Ctrl-C on a terminal reaches the command once, and gpuattr still reports",
          "[run][signals]") {
  TempDir dir;
  const ProcessResult result = RunProcess(
      {"python3", std::string(GPUATTR_SOURCE_DIR) + "/tests/component/terminal_interrupt.py",
       GPUATTR_BINARY, dir.File("r.json")});
  INFO(result.out << result.err);
  REQUIRE(result.exited);
  CHECK(result.exit_code == 0);
}

TEST_CASE("a command that cannot be executed is answered like a shell", "[run]") {
  TempDir dir;
  SECTION("not found: 127") {
    const ProcessResult result =
        RunProcess(Gpuattr({"run", "-o", dir.File("r.json"), "--", "gpuattr-no-such-command-xyz"}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 127);
    CHECK_THAT(result.err, Catch::Contains("gpuattr-no-such-command-xyz: command not found"));
    CHECK(result.out.empty());
  }
  SECTION("not executable: 126") {
    const std::string script = dir.File("not-executable.sh");
    std::ofstream(script) << "#!/bin/sh\nexit 0\n";
    REQUIRE(chmod(script.c_str(), 0644) == 0);
    const ProcessResult result =
        RunProcess(Gpuattr({"run", "-o", dir.File("r.json"), "--", script}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 126);
  }
}

TEST_CASE("gpuattr help SUB, --version anywhere, and unknown options named with a usage line",
          "[run][usage]") {
  const ProcessResult help = RunProcess(Gpuattr({"help", "import"}));
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("Usage: gpuattr import [OPTIONS] files..."));
  CHECK(help.out == RunProcess(Gpuattr({"import", "--help"})).out);
  CHECK(RunProcess(Gpuattr({"help"})).out == RunProcess(Gpuattr({"--help"})).out);
  const ProcessResult unknown_help = RunProcess(Gpuattr({"help", "frobnicate"}));
  CHECK(unknown_help.exit_code == 2);
  CHECK_THAT(unknown_help.err, Catch::Contains("unknown subcommand 'frobnicate'"));

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--version"}, {"run", "--version"}, {"import", "--version"}, {"gate", "--version"}}) {
    const ProcessResult version = RunProcess(Gpuattr(args));
    INFO(args[0] << " " << (args.size() > 1 ? args[1] : ""));
    CHECK(version.exit_code == 0);
    CHECK(version.out == "gpuattr " GPUATTR_VERSION "\n");
  }
  // After CMD, --version is CMD's.
  TempDir dir;
  CHECK(RunProcess(Gpuattr({"run", "-q", "-o", dir.File("r.json"), "--", "/bin/echo", "--version"}))
            .out.find("gpuattr") == std::string::npos);

  const ProcessResult top = RunProcess(Gpuattr({"--bogus"}));
  CHECK(top.exit_code == 2);
  CHECK_THAT(top.err, Catch::Contains("unknown option '--bogus'") && Catch::Contains("Usage: "));
  const ProcessResult flag = RunProcess(Gpuattr({"import", "--bogus", "trace.json"}));
  CHECK(flag.exit_code == 2);
  CHECK_THAT(flag.err, Catch::Contains("--bogus") &&
                           Catch::Contains("Usage: gpuattr import [OPTIONS] files...") &&
                           Catch::Contains("gpuattr help import"));
}

TEST_CASE("usage errors exit 2 before anything runs", "[run][usage]") {
  TempDir dir;
  SECTION("an unknown subcommand") {
    const ProcessResult result = RunProcess(Gpuattr({"frobnicate"}));
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("unknown subcommand 'frobnicate'"));
  }
  SECTION("no subcommand") { CHECK(RunProcess(Gpuattr({})).exit_code == 2); }
  SECTION("run without a command") { CHECK(RunProcess(Gpuattr({"run"})).exit_code == 2); }
  SECTION("an unknown flag") {
    CHECK(RunProcess(Gpuattr({"run", "--frobnicate", "--", "/bin/true"})).exit_code == 2);
  }
  SECTION("a coverage threshold out of range") {
    CHECK(
        RunProcess(Gpuattr({"run", "--coverage-threshold", "1.5", "--", "/bin/true"})).exit_code ==
        2);
  }
  SECTION("a report path in a directory that does not exist") {
    const ProcessResult result =
        RunProcess(Gpuattr({"run", "-o", dir.File("missing/r.json"), "--", "/bin/echo", "ran"}));
    CHECK(result.exit_code == 4);  // an output that cannot be written, in every command
    CHECK(result.out.empty());     // the command never ran
  }
  SECTION("--armed with an option that writes part of a report") {
    // Armed, gpuattr run collects nothing; a window's report is `gpuattr attach -o`.
    const std::string option = GENERATE(as<std::string>{}, "-o", "--activities", "--trace",
                                        "--folded", "--speedscope", "--kernel-maps");
    const ProcessResult result =
        RunProcess(Gpuattr({"run", "--armed", option, dir.File("out"), "--", "/bin/echo", "ran"}));
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("--armed writes no report"));
    CHECK(result.out.empty());  // the command never ran
  }
  SECTION("no shim where GPUATTR_INJECT_LIBRARY points") {
    const ProcessResult result =
        RunProcess(Gpuattr({"run", "-o", dir.File("r.json"), "--", "/bin/echo", "ran"}),
                   {{"GPUATTR_INJECT_LIBRARY", dir.File("nope.so")}});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("GPUATTR_INJECT_LIBRARY"));
    CHECK(result.out.empty());
  }
}

TEST_CASE("kept kernel maps: refused before the command runs when they cannot be kept, else kept",
          "[run]") {
  TempDir dir;
  const std::string maps = dir.File("maps.jsonl");
  SECTION("without the annotator, which writes the maps") {
    const ProcessResult result = RunProcess(
        Gpuattr({"run", "--pytorch", "off", "--kernel-maps", maps, "--", "/bin/echo", "ran"}));
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("--kernel-maps needs the Python annotator"));
    CHECK(result.out.empty());
  }
  SECTION("over a file that exists, unless --force-overwrite") {
    test_support::WriteFile(maps, "mine\n");
    const ProcessResult refused = RunProcess(Gpuattr(
        {"run", "-q", "-o", dir.File("r.json"), "--kernel-maps", maps, "--", "/bin/echo", "ran"}));
    CHECK(refused.exit_code == 4);
    CHECK(refused.out.empty());
    CHECK(test_support::ReadFile(maps) == "mine\n");
    const ProcessResult kept =
        RunProcess(Gpuattr({"run", "-q", "--force-overwrite", "-o", dir.File("r.json"),
                            "--kernel-maps", maps, "--", "/bin/echo", "ran"}));
    CHECK(kept.exit_code == 0);
    CHECK(test_support::ReadFile(maps).empty());  // a program that compiled nothing
  }
  SECTION("named as every output is: %n gives the next free name, - is no file") {
    test_support::WriteFile(dir.File("maps1.jsonl"), "mine\n");
    const ProcessResult kept =
        RunProcess(Gpuattr({"run", "-q", "-o", dir.File("r.json"), "--kernel-maps",
                            dir.File("maps%n.jsonl"), "--", "/bin/echo", "ran"}));
    CHECK(kept.exit_code == 0);
    CHECK(test_support::ReadFile(dir.File("maps1.jsonl")) == "mine\n");
    CHECK(test_support::ReadFile(dir.File("maps2.jsonl")).empty());
    const ProcessResult refused = RunProcess(
        Gpuattr({"run", "-q", "-o", dir.File("r2.json"), "--kernel-maps", "-", "--", "/bin/true"}));
    CHECK(refused.exit_code == 2);
  }
}

TEST_CASE("gpuattr --help and --version print on stdout and exit 0", "[usage]") {
  const ProcessResult help = RunProcess(Gpuattr({"--help"}));
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("run") && Catch::Contains("gpuattr run -o report.json"));
  const ProcessResult run_help = RunProcess(Gpuattr({"run", "--help"}));
  CHECK(run_help.exit_code == 0);
  CHECK_THAT(run_help.out, Catch::Contains("--output") && Catch::Contains("--no-inherit") &&
                               Catch::Contains("--coverage-threshold"));
  const ProcessResult version = RunProcess(Gpuattr({"--version"}));
  CHECK(version.exit_code == 0);
  CHECK(version.out == std::string("gpuattr ") + GPUATTR_VERSION + "\n");
}

TEST_CASE("gpuattr run reports every process that connects, including late descendants",
          "[run][ingest]") {
  TempDir dir;
  const std::string report_path = dir.File("r.json");
  SECTION("the command itself, with its exit status") {
    const ProcessResult result = RunProcess(
        Gpuattr({"run", "-q", "-o", report_path, "--", GPUATTR_FAKE_TRACED_PROCESS, "exit", "3"}));
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 3);
    RequireValidReport(report_path);
    const nlohmann::json report = ReadJson(report_path);
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["status"] == "complete");
    CHECK(report["processes"][0]["exit_status"] == 3);
  }
  SECTION("a child that connects after the command exited is waited for") {
    const ProcessResult result = RunProcess(Gpuattr(
        {"run", "-q", "-o", report_path, "--", GPUATTR_FAKE_TRACED_PROCESS, "late-child", "300"}));
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    const nlohmann::json report = ReadJson(report_path);
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["status"] == "complete");
  }
  SECTION("a descendant that never ends is cut at the drain timeout, as truncated") {
    const std::string script =
        std::string(GPUATTR_FAKE_TRACED_PROCESS) + " linger >/dev/null 2>&1 & sleep 0.3";
    const ProcessResult result = RunProcess(Gpuattr(
        {"run", "-q", "--drain-timeout", "0.5", "-o", report_path, "--", "/bin/sh", "-c", script}));
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.seconds < 5.0);
    const nlohmann::json report = ReadJson(report_path);
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["status"] == "truncated");
    kill(report["processes"][0]["pid"].get<pid_t>(), SIGKILL);
  }
}

TEST_CASE("the child environment preloads the shim ahead of LD_PRELOAD and names the socket",
          "[run][env]") {
  // A GPUATTR_MODE=armed left in the caller's environment must not make `gpuattr run` armed.
  const std::vector<std::string> base = {"PATH=/bin", "LD_PRELOAD=/opt/a.so", "X=1",
                                         "GPUATTR_MODE=armed"};
  const std::vector<std::string> env =
      collector::BuildChildEnvironment(base, "/s/libgpuattr_inject.so", "/tmp/d/collector.sock");
  const std::set<std::string> entries(env.begin(), env.end());
  CHECK(entries ==
        std::set<std::string>{"PATH=/bin", "LD_PRELOAD=/s/libgpuattr_inject.so:/opt/a.so", "X=1",
                              "CUDA_INJECTION64_PATH=/s/libgpuattr_inject.so",
                              "NVTX_INJECTION64_PATH=/s/libgpuattr_inject.so",
                              "GPUATTR_SOCKET=/tmp/d/collector.sock", "GPUATTR_MODE=traced"});
  // Already listed (a nested run): not repeated.
  const std::vector<std::string> again =
      collector::BuildChildEnvironment(env, "/s/libgpuattr_inject.so", "/tmp/e/collector.sock");
  CHECK(std::count(again.begin(), again.end(), "LD_PRELOAD=/s/libgpuattr_inject.so:/opt/a.so") ==
        1);
  CHECK(std::count(again.begin(), again.end(), "GPUATTR_SOCKET=/tmp/e/collector.sock") == 1);
}

TEST_CASE("the shim is found through the environment, the build tree or the install tree",
          "[run][shim]") {
  TempDir dir;
  fs::create_directories(dir.File("bin"));
  fs::create_directories(dir.File("lib/gpuattr"));
  const std::string installed = dir.File("lib/gpuattr/libgpuattr_inject.so");
  std::ofstream(installed) << "not really a library";
  SECTION("installed layout") {
    const auto found = collector::LocateShimFrom(nullptr, dir.File("bin/gpuattr"));
    REQUIRE(found.ok());
    CHECK(*found == fs::canonical(installed).string());
  }
  SECTION("the build tree wins over the install tree") {
    fs::create_directories(dir.File("inject"));
    std::ofstream(dir.File("inject/libgpuattr_inject.so")) << "x";
    const auto found = collector::LocateShimFrom(nullptr, dir.File("bin/gpuattr"));
    REQUIRE(found.ok());
    CHECK(*found == fs::canonical(dir.File("inject/libgpuattr_inject.so")).string());
  }
  SECTION("the environment wins, and a wrong one is an error, not a fallback") {
    const auto found = collector::LocateShimFrom(installed.c_str(), "/nowhere/bin/gpuattr");
    REQUIRE(found.ok());
    const auto missing = collector::LocateShimFrom("/nowhere/x.so", dir.File("bin/gpuattr"));
    CHECK(missing.status().code() == StatusCode::kNotFound);
  }
  SECTION("nothing anywhere names every place looked at") {
    const auto missing = collector::LocateShimFrom(nullptr, "/nowhere/bin/gpuattr");
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.status().message(),
               Catch::Contains("/nowhere/inject/libgpuattr_inject.so") &&
                   Catch::Contains("/nowhere/lib/gpuattr"));
  }
}

TEST_CASE("the Python annotator's directory is found like the shim, as a directory",
          "[run][shim]") {
  TempDir dir;
  fs::create_directories(dir.File("bin"));
  fs::create_directories(dir.File("lib/gpuattr/gpuattr_site"));
  SECTION("installed layout") {
    const auto found = collector::LocatePythonSiteFrom(nullptr, dir.File("bin/gpuattr"));
    REQUIRE(found.ok());
    CHECK(*found == fs::canonical(dir.File("lib/gpuattr/gpuattr_site")).string());
  }
  SECTION("the build tree wins over the install tree") {
    fs::create_directories(dir.File("python/gpuattr_site"));
    const auto found = collector::LocatePythonSiteFrom(nullptr, dir.File("bin/gpuattr"));
    REQUIRE(found.ok());
    CHECK(*found == fs::canonical(dir.File("python/gpuattr_site")).string());
  }
  SECTION("a file of that name is not the directory; a wrong environment value is an error") {
    fs::remove(dir.File("lib/gpuattr/gpuattr_site"));
    std::ofstream(dir.File("lib/gpuattr/gpuattr_site")) << "x";
    const auto missing = collector::LocatePythonSiteFrom(nullptr, dir.File("bin/gpuattr"));
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.status().message(), Catch::Contains("GPUATTR_PYTHON_SITE"));
    const auto wrong = collector::LocatePythonSiteFrom("/nowhere", dir.File("bin/gpuattr"));
    CHECK(wrong.status().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("the annotator leads PYTHONPATH once, and off touches nothing but its switch", "[run]") {
  const std::vector<std::string> base = {"PATH=/bin", "PYTHONPATH=/mine"};
  std::vector<std::string> env = base;
  collector::AddPythonAnnotator(&env, "modules", "/g/gpuattr_site", "/cuda/libnvtx3interop.so.1");
  CHECK(std::set<std::string>(env.begin(), env.end()) ==
        std::set<std::string>{"PATH=/bin", "PYTHONPATH=/g/gpuattr_site:/mine",
                              "GPUATTR_PYTORCH=modules",
                              "GPUATTR_NVTX_LIBRARY=/cuda/libnvtx3interop.so.1"});
  // A nested run: PYTHONPATH is not extended twice, a chosen NVTX library is kept.
  std::vector<std::string> nested = env;
  collector::SetVariable(&nested, collector::kNvtxLibraryEnv, "/other/libnvtx3interop.so.1");
  collector::AddPythonAnnotator(&nested, "modules", "/g/gpuattr_site",
                                "/cuda/libnvtx3interop.so.1");
  CHECK(std::count(nested.begin(), nested.end(), "PYTHONPATH=/g/gpuattr_site:/mine") == 1);
  CHECK(std::count(nested.begin(), nested.end(),
                   "GPUATTR_NVTX_LIBRARY=/other/libnvtx3interop.so.1") == 1);
  std::vector<std::string> off = base;
  collector::AddPythonAnnotator(&off, "off", "", "/cuda/libnvtx3interop.so.1");
  CHECK(std::set<std::string>(off.begin(), off.end()) ==
        std::set<std::string>{"PATH=/bin", "PYTHONPATH=/mine", "GPUATTR_PYTORCH=off"});
}

}  // namespace gpuattr::component
