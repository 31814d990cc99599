// `gpuattr daemon`, `gpuattr attach` and `gpuattr run --armed` as a user runs them: a real daemon
// process, gpuattr_fake_armed_process and gpuattr_fake_traced_process standing in for shims,
// and scripted bad clients built with wire::MessageWriter (docs/attach.md).
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "subprocess.h"
#include "test_files.h"
#include "wire/codec.h"
#include "wire_client.h"

namespace gpuattr::component {
namespace {

using test_support::MonotonicSeconds;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::Subprocess;
using test_support::TempDir;
using test_support::ValidateReport;

namespace fs = std::filesystem;

std::vector<std::string> Gpuattr(std::vector<std::string> args) {
  args.insert(args.begin(), GPUATTR_BINARY);
  return args;
}

void RequireValidReport(const std::string& path) {
  const test_support::SchemaCheck check = ValidateReport(path);
  INFO("validate_report.py on " << path << ": " << check.output);
  REQUIRE(check.valid);
}

bool WaitFor(const std::function<bool()>& done, double seconds) {
  const double deadline = MonotonicSeconds() + seconds;
  while (!done()) {
    if (MonotonicSeconds() > deadline) return false;
    usleep(20000);
  }
  return true;
}

// Names in `dir` that start with `prefix`, sorted.
std::vector<std::string> FilesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A daemon in a fresh directory: the socket in <dir>/run (created by the daemon), reports in
// <dir>/reports. Stop() sends SIGTERM and returns what the daemon printed.
class DaemonFixture {
 public:
  DaemonFixture() : socket_path_(dir_.File("run/daemon.sock")), reports_dir_(dir_.File("reports")) {
    daemon_ = std::make_unique<Subprocess>(
        Gpuattr({"daemon", "--socket", socket_path_, "--reports-dir", reports_dir_}));
    REQUIRE(WaitFor(
        [&] {
          const int fd = ConnectClient(socket_path_);
          if (fd < 0) return false;
          close(fd);
          return true;
        },
        10));
  }
  ~DaemonFixture() {
    if (daemon_) Stop();
  }

  ProcessResult Stop() {
    kill(daemon_->pid(), SIGTERM);
    ProcessResult result = daemon_->Wait(20);
    daemon_.reset();
    return result;
  }

  const std::string& socket_path() const { return socket_path_; }
  const std::string& reports_dir() const { return reports_dir_; }
  std::string File(const std::string& name) const { return dir_.File(name); }
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::string socket_path_;
  std::string reports_dir_;
  std::unique_ptr<Subprocess> daemon_;
};

// `gpuattr attach --pid PID --no-inject` with `extra` arguments (the stand-in for an armed shim
// registers by itself: nothing is loaded into it); retried while the daemon has not yet seen the
// process register (attach_requires_shim), at most five seconds.
ProcessResult AttachPid(const DaemonFixture& daemon, pid_t pid, const std::string& output,
                        std::vector<std::string> extra) {
  // A refused attempt (the process not armed yet) leaves its refusal report at `output`; the retry
  // replaces it.
  std::vector<std::string> args = {"attach",      "--pid",    std::to_string(pid),
                                   "--no-inject", "--socket", daemon.socket_path(),
                                   "-o",          output,     "--force-overwrite"};
  args.insert(args.end(), extra.begin(), extra.end());
  const double deadline = MonotonicSeconds() + 5;
  for (;;) {
    ProcessResult result = RunProcess(Gpuattr(args));
    const bool not_yet = result.exited && result.exit_code == 3 &&
                         result.err.find("attach_requires_shim") != std::string::npos;
    if (!not_yet || MonotonicSeconds() > deadline) return result;
    usleep(50000);
  }
}

// The run report the daemon wrote for `pid`, once it is there (an empty path after 10 s).
std::string WaitForRunReport(const DaemonFixture& daemon, pid_t pid) {
  const std::string prefix = "run-" + std::to_string(pid) + "-";
  std::vector<std::string> found;
  WaitFor(
      [&] {
        found = FilesStartingWith(daemon.reports_dir(), prefix);
        return !found.empty();
      },
      10);
  return found.empty() ? std::string() : daemon.reports_dir() + "/" + found[0];
}

// A wire message with an armed Hello naming `pid`.
Datagram ArmedHello(uint32_t pid) {
  Datagram buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  wire::Hello hello = wire::MakeHello(wire::HelloMode::kArmed, pid);
  writer.Append(hello);
  buffer.resize(writer.Finish(0));
  return buffer;
}

}  // namespace

TEST_CASE("the daemon writes a schema-valid report for a traced-mode client when it ends",
          "[daemon]") {
  DaemonFixture daemon;
  const ProcessResult client = RunProcess({GPUATTR_FAKE_TRACED_PROCESS, "complete"},
                                          {{"GPUATTR_SOCKET", daemon.socket_path()}});
  REQUIRE(client.exited);
  REQUIRE(client.exit_code == 0);
  // The client's pid is not known here (RunProcess waits); the one run report names it.
  std::vector<std::string> reports;
  REQUIRE(WaitFor(
      [&] {
        reports = FilesStartingWith(daemon.reports_dir(), "run-");
        return !reports.empty();
      },
      10));
  REQUIRE(reports.size() == 1);
  const std::string path = daemon.reports_dir() + "/" + reports[0];
  RequireValidReport(path);
  const nlohmann::json report = ReadJson(path);
  CHECK(report["capture"]["mode"] == "run");
  REQUIRE(report["processes"].size() == 1);
  const nlohmann::json& process = report["processes"][0];
  CHECK(reports[0].rfind("run-" + std::to_string(process["pid"].get<uint32_t>()) + "-", 0) == 0);
  CHECK(process["status"] == "complete");
  CHECK(process["totals"]["kernel_ns"] == 500);
  CHECK(process["totals"]["kernels"] == 1);

  const ProcessResult stopped = daemon.Stop();
  INFO("daemon stderr: " << stopped.err);
  REQUIRE(stopped.exited);
  CHECK(stopped.exit_code == 0);
  CHECK_THAT(stopped.err, Catch::Contains("1 traced report(s)"));
  CHECK_FALSE(fs::exists(daemon.socket_path()));  // unlinked on the way out
}

TEST_CASE("gpuattr attach --pid captures a window of an armed process, twice in a row",
          "[daemon][attach]") {
  DaemonFixture daemon;
  Subprocess armed({GPUATTR_FAKE_ARMED_PROCESS, "3"}, {{"GPUATTR_SOCKET", daemon.socket_path()}});

  for (uint64_t attach_index = 1; attach_index <= 2; ++attach_index) {
    const std::string output = daemon.File("window" + std::to_string(attach_index) + ".json");
    const ProcessResult result = AttachPid(daemon, armed.pid(), output, {"--duration", "200ms"});
    INFO("attach stderr: " << result.err);
    REQUIRE(result.exited);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("report written to " + output));
    RequireValidReport(output);
    const nlohmann::json report = ReadJson(output);
    CHECK(report["capture"]["mode"] == "attach");
    CHECK(report["capture"]["window"]["selector"] == "pid");
    CHECK(report["capture"]["window"]["pid"] == armed.pid());
    CHECK(report["capture"]["window"]["duration_ns"] == 200000000);
    REQUIRE(report["processes"].size() == 1);
    const nlohmann::json& process = report["processes"][0];
    CHECK(process["pid"] == armed.pid());
    CHECK(process["rank"] == 3);
    CHECK(process["status"] == "complete");
    CHECK(process["totals"]["kernel_ns"] == 1500);
    CHECK(process["totals"]["kernels"] == 3);
    CHECK(process["totals"]["launches"] == 3);
    CHECK(process["window"]["attach_index"] == attach_index);
    CHECK(process["window"]["end_reason"] == "closed");
    // The copy is the daemon's own report, byte for byte.
    const auto daemon_reports = FilesStartingWith(daemon.reports_dir(), "attach-");
    REQUIRE(daemon_reports.size() == attach_index);
    CHECK(test_support::ReadFile(output) ==
          test_support::ReadFile(daemon.reports_dir() + "/" + daemon_reports.back()));
  }

  {  // A steps window carries its step name to the shim and ends by itself.
    const std::string output = daemon.File("steps.json");
    const ProcessResult result =
        AttachPid(daemon, armed.pid(), output, {"--steps", "4", "--step", "train"});
    INFO("attach stderr: " << result.err);
    REQUIRE(result.exited);
    REQUIRE(result.exit_code == 0);
    RequireValidReport(output);
    const nlohmann::json report = ReadJson(output);
    CHECK(report["capture"]["window"]["steps"] == 4);
    CHECK(report["capture"]["window"]["step_name"] == "train");
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["window"]["attach_index"] == 3);
    CHECK(report["processes"][0]["window"]["end_reason"] == "steps_done");
    CHECK(report["processes"][0]["totals"]["kernel_ns"] == 1500);
  }

  const ProcessResult stopped = daemon.Stop();
  INFO("daemon stderr: " << stopped.err);
  REQUIRE(stopped.exited);
  CHECK(stopped.exit_code == 0);
  CHECK_THAT(stopped.err, Catch::Contains("0 rejected"));
  // The daemon's going closed the armed process's connection: it exits 0 on its own.
  const ProcessResult armed_result = armed.Wait(10);
  CHECK(armed_result.exited);
  CHECK(armed_result.exit_code == 0);
}

TEST_CASE(
    "windows end when the attach client goes away early or the daemon stops, and the reports stay",
    "[daemon][attach]") {
  DaemonFixture daemon;
  Subprocess armed({GPUATTR_FAKE_ARMED_PROCESS},
                   {{"GPUATTR_SOCKET", daemon.socket_path()},
                    {"GPUATTR_FAKE_WINDOW_MARKER", daemon.File("marker")}});
  // The client gives up long before its 60 s window would end: the daemon closes the window and
  // writes the report all the same.
  const ProcessResult early = AttachPid(daemon, armed.pid(), daemon.File("early.json"),
                                        {"--duration", "60s", "--timeout", "300ms"});
  INFO("attach stderr: " << early.err);
  REQUIRE(early.exited);
  CHECK(early.exit_code == 4);
  CHECK_THAT(early.err, Catch::Contains("no reply from the daemon"));
  std::vector<std::string> reports;
  REQUIRE(WaitFor(
      [&] {
        reports = FilesStartingWith(daemon.reports_dir(), "attach-");
        return !reports.empty();
      },
      10));
  RequireValidReport(daemon.reports_dir() + "/" + reports[0]);
  const nlohmann::json report = ReadJson(daemon.reports_dir() + "/" + reports[0]);
  REQUIRE(report["processes"].size() == 1);
  CHECK(report["processes"][0]["window"]["end_reason"] == "closed");
  CHECK(report["processes"][0]["totals"]["kernel_ns"] == 1500);

  // A daemon stopped inside a window answers its client with the window, truncated.
  const std::string output = daemon.File("stopped.json");
  Subprocess waiting(Gpuattr({"attach", "--pid", std::to_string(armed.pid()), "--duration", "60s",
                              "--socket", daemon.socket_path(), "-o", output}));
  // The fake marks each window whose records it has sent; they are queued for the daemon then.
  REQUIRE(WaitFor([&] { return fs::exists(daemon.File("marker.2")); }, 10));
  const ProcessResult stopped = daemon.Stop();
  INFO("daemon stderr: " << stopped.err);
  CHECK(stopped.exit_code == 0);
  const ProcessResult answered = waiting.Wait(10);
  INFO("attach stderr: " << answered.err);
  REQUIRE(answered.exited);
  CHECK(answered.exit_code == 0);
  RequireValidReport(output);
  const nlohmann::json truncated = ReadJson(output);
  REQUIRE(truncated["processes"].size() == 1);
  CHECK(truncated["processes"][0]["status"] == "truncated");
  CHECK(truncated["processes"][0]["window"]["attach_index"] == 2);
  CHECK(truncated["processes"][0]["totals"]["kernel_ns"] == 1500);
}

TEST_CASE("gpuattr attach refusals write a refused report and exit 3", "[daemon][attach]") {
  SECTION("a live process that never registered, --no-inject: attach_requires_shim") {
    DaemonFixture daemon;
    const std::string output = daemon.File("refused.json");
    const ProcessResult result =
        RunProcess(Gpuattr({"attach", "--pid", std::to_string(getpid()), "--duration", "1s",
                            "--no-inject", "--socket", daemon.socket_path(), "-o", output}));
    INFO("attach stderr: " << result.err);
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    RequireValidReport(output);
    const nlohmann::json report = ReadJson(output);
    CHECK(report["capture"]["mode"] == "attach");
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["pid"] == getpid());
    CHECK(report["processes"][0]["status"] == "refused");
    REQUIRE(report["processes"][0]["refusals"].size() == 1);
    CHECK(report["processes"][0]["refusals"][0]["code"] == "attach_requires_shim");
    CHECK_THAT(report["processes"][0]["refusals"][0]["remedy"].get<std::string>(),
               Catch::Contains("gpuattr run --armed"));
  }
  SECTION("no daemon on the socket: daemon_unreachable") {
    TempDir dir;
    const std::string output = dir.File("refused.json");
    const ProcessResult result = RunProcess(Gpuattr(
        {"attach", "--all", "--steps", "2", "--socket", dir.File("nobody.sock"), "-o", output}));
    INFO("attach stderr: " << result.err);
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    RequireValidReport(output);
    const nlohmann::json report = ReadJson(output);
    REQUIRE(report["processes"].size() == 1);
    CHECK(report["processes"][0]["refusals"][0]["code"] == "daemon_unreachable");
  }
  SECTION("a pid that does not exist: exit 3 with a message, no report") {
    TempDir dir;
    const ProcessResult result =
        RunProcess(Gpuattr({"attach", "--pid", "2147483647", "--duration", "1s", "--socket",
                            dir.File("nobody.sock"), "-o", dir.File("r.json")}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("no process with pid 2147483647"));
    CHECK_FALSE(fs::exists(dir.File("r.json")));
  }
  SECTION("a process of another uid: attach_other_user") {
    REQUIRE(geteuid() == 0);  // CI runs the component tier as root; elsewhere this must not pass
    TempDir dir;
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
      pause();
      _exit(0);
    }
    // Until the child has become uid 65534 /proc shows it as ours.
    struct stat info {};
    REQUIRE(WaitFor(
        [&] {
          return stat(("/proc/" + std::to_string(child)).c_str(), &info) == 0 &&
                 info.st_uid == 65534;
        },
        5));
    const std::string output = dir.File("refused.json");
    const ProcessResult result =
        RunProcess(Gpuattr({"attach", "--pid", std::to_string(child), "--duration", "1s",
                            "--socket", dir.File("nobody.sock"), "-o", output}));
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    INFO("attach stderr: " << result.err);
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    RequireValidReport(output);
    CHECK(ReadJson(output)["processes"][0]["refusals"][0]["code"] == "attach_other_user");
  }
}

TEST_CASE("a peer of another uid is refused and counted while a good client beside it is intact",
          "[daemon][uid]") {
  // Becoming another user needs root; CI runs the component tier as root. Anywhere else this
  // test fails loudly rather than passing without testing anything.
  REQUIRE(geteuid() == 0);
  DaemonFixture daemon;
  // Open the doors the 0700 directory normally keeps shut, so that only the SO_PEERCRED check
  // stands between the foreign peer and the daemon.
  REQUIRE(chmod(daemon.dir().c_str(), 0755) == 0);
  REQUIRE(chmod(fs::path(daemon.socket_path()).parent_path().c_str(), 0755) == 0);
  REQUIRE(chmod(daemon.socket_path().c_str(), 0777) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // 0 refused as expected, 1 setuid failed, 2 connect failed, 3 not closed.
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    const int fd = ConnectClient(daemon.socket_path());
    if (fd < 0) _exit(2);
    SendDatagram(fd, HelloMessage(static_cast<uint32_t>(getpid()), 0));
    _exit(WaitForPeerClose(fd, 5000) ? 0 : 3);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  Subprocess good({GPUATTR_FAKE_TRACED_PROCESS, "complete"},
                  {{"GPUATTR_SOCKET", daemon.socket_path()}});
  const pid_t good_pid = good.pid();
  REQUIRE(good.Wait(10).exit_code == 0);
  const std::string report_path = WaitForRunReport(daemon, good_pid);
  REQUIRE_FALSE(report_path.empty());
  RequireValidReport(report_path);
  CHECK(ReadJson(report_path)["processes"][0]["status"] == "complete");
  CHECK(FilesStartingWith(daemon.reports_dir(), "run-").size() == 1);

  const ProcessResult stopped = daemon.Stop();
  INFO("daemon stderr: " << stopped.err);
  CHECK_THAT(stopped.err, Catch::Contains("uid 65534 is not ours"));
  CHECK_THAT(stopped.err, Catch::Contains("1 rejected"));
}

TEST_CASE("garbage, oversized and lying clients are disconnected and counted, a good one is intact",
          "[daemon]") {
  DaemonFixture daemon;
  {  // Each bad client is closed by the daemon.
    const int garbage = ConnectClient(daemon.socket_path());
    REQUIRE(garbage >= 0);
    REQUIRE(SendDatagram(garbage, Datagram(100, 0xAB)));
    CHECK(WaitForPeerClose(garbage, 5000));
    close(garbage);

    const int oversized = ConnectClient(daemon.socket_path());
    REQUIRE(oversized >= 0);
    int buffer_bytes = 4 * wire::kMaxMessageBytes;
    setsockopt(oversized, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
    REQUIRE(SendDatagram(oversized, PaddedMessage(0, wire::kMaxMessageBytes + 8)));
    CHECK(WaitForPeerClose(oversized, 5000));
    close(oversized);

    // An armed registration must name the peer's own pid (SO_PEERCRED).
    const int liar = ConnectClient(daemon.socket_path());
    REQUIRE(liar >= 0);
    REQUIRE(SendDatagram(liar, ArmedHello(static_cast<uint32_t>(getpid()) + 1)));
    CHECK(WaitForPeerClose(liar, 5000));
    close(liar);
  }

  Subprocess good({GPUATTR_FAKE_TRACED_PROCESS, "complete"},
                  {{"GPUATTR_SOCKET", daemon.socket_path()}});
  const pid_t good_pid = good.pid();
  REQUIRE(good.Wait(10).exit_code == 0);
  const std::string report_path = WaitForRunReport(daemon, good_pid);
  REQUIRE_FALSE(report_path.empty());
  RequireValidReport(report_path);
  const nlohmann::json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  CHECK(report["processes"][0]["status"] == "complete");
  CHECK(report["processes"][0]["totals"]["kernel_ns"] == 500);

  const ProcessResult stopped = daemon.Stop();
  INFO("daemon stderr: " << stopped.err);
  REQUIRE(stopped.exited);
  CHECK(stopped.exit_code == 0);
  CHECK_THAT(stopped.err, Catch::Contains("3 rejected, 3 message(s) rejected"));
  CHECK_THAT(stopped.err, Catch::Contains("exceeds the limit"));
  CHECK_THAT(stopped.err, Catch::Contains("the socket's peer is pid"));
}

TEST_CASE(
    "the daemon refuses an unsafe socket directory and a live daemon, and replaces a stale socket",
    "[daemon]") {
  TempDir dir;
  const std::string reports = dir.File("reports");
  SECTION("a socket directory open to others: exit 3") {
    const std::string open_dir = dir.File("open");
    REQUIRE(mkdir(open_dir.c_str(), 0755) == 0);
    REQUIRE(chmod(open_dir.c_str(), 0755) == 0);
    const ProcessResult result = RunProcess(
        Gpuattr({"daemon", "--socket", open_dir + "/daemon.sock", "--reports-dir", reports}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("group and others must have no access"));
  }
  SECTION("a socket a live daemon answers on: exit 3") {
    DaemonFixture first;
    const ProcessResult result =
        RunProcess(Gpuattr({"daemon", "--socket", first.socket_path(), "--reports-dir", reports}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("already listens"));
    // The first daemon still serves.
    const int fd = ConnectClient(first.socket_path());
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
  }
  SECTION("a stale socket nobody listens on is replaced") {
    const std::string socket_dir = dir.File("stale");
    REQUIRE(mkdir(socket_dir.c_str(), 0700) == 0);
    const std::string socket_path = socket_dir + "/daemon.sock";
    const int stale = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
    REQUIRE(bind(stale, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
    close(stale);
    Subprocess daemon(Gpuattr({"daemon", "--socket", socket_path, "--reports-dir", reports}));
    CHECK(WaitFor(
        [&] {
          const int fd = ConnectClient(socket_path);
          if (fd >= 0) close(fd);
          return fd >= 0;
        },
        10));
    kill(daemon.pid(), SIGTERM);
    const ProcessResult result = daemon.Wait(10);
    CHECK(result.exit_code == 0);
  }
}

TEST_CASE("gpuattr run --armed runs CMD armed for the daemon and passes its exit status through",
          "[daemon][run]") {
  const std::vector<std::string> command = {"/bin/sh", "-c",
                                            "echo \"$GPUATTR_MODE $GPUATTR_SOCKET\"; exit 5"};
  SECTION("with a daemon") {
    DaemonFixture daemon;
    std::vector<std::string> args = {"run", "--armed", "--socket", daemon.socket_path(), "--"};
    args.insert(args.end(), command.begin(), command.end());
    const ProcessResult result = RunProcess(Gpuattr(args));
    INFO("stderr: " << result.err);
    REQUIRE(result.exited);
    CHECK(result.exit_code == 5);
    CHECK(result.out == "armed " + daemon.socket_path() + "\n");
    CHECK(result.err.empty());
  }
  SECTION("without one: a warning, and CMD runs anyway") {
    TempDir dir;
    std::vector<std::string> args = {"run", "--armed", "--socket", dir.File("nobody.sock"), "--"};
    args.insert(args.end(), command.begin(), command.end());
    const ProcessResult result = RunProcess(Gpuattr(args));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 5);
    CHECK(result.out == "armed " + dir.File("nobody.sock") + "\n");
    CHECK_THAT(result.err, Catch::Contains("warning"));
    CHECK(dir.Entries().empty());  // no report
  }
}

}  // namespace gpuattr::component
