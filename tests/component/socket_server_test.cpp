// The ingest server against real client sockets, in-process: the test thread drives Service().
#include "ingest/socket_server.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include "report/report_builder.h"
#include "report/report_writer.h"
#include "subprocess.h"
#include "wire/protocol.h"
#include "wire_client.h"

namespace gpuattr::component {
namespace {

using test_support::MonotonicSeconds;

using collector::ServerOptions;
using collector::SocketServer;

// A server listening in a fresh 0700 directory, removed afterwards.
class ServerFixture {
 public:
  explicit ServerFixture(ServerOptions options = {}) {
    char pattern[] = "/tmp/gpuattr-component-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    socket_path_ = dir_ + "/collector.sock";
    auto server = SocketServer::Listen(socket_path_, options);
    INFO(server.status().ToString());
    REQUIRE(server.ok());
    server_ = std::move(server).value();
  }
  ~ServerFixture() {
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  SocketServer& server() { return *server_; }
  const std::string& dir() const { return dir_; }
  const std::string& socket_path() const { return socket_path_; }

  // Services the server until `done` holds or five seconds pass; returns `done()`.
  bool PumpUntil(const std::function<bool()>& done) {
    const double deadline = MonotonicSeconds() + 5.0;
    while (!done() && MonotonicSeconds() < deadline) {
      Status status = server_->Service(20);
      if (!status.ok()) FAIL(status.ToString());
    }
    return done();
  }

 private:
  std::string dir_;
  std::string socket_path_;
  std::unique_ptr<SocketServer> server_;
};

// An fd closed at scope exit.
struct ClientFd {
  int fd;
  explicit ClientFd(int value) : fd(value) { REQUIRE(fd >= 0); }
  ~ClientFd() {
    if (fd >= 0) close(fd);
  }
  void Close() {
    close(fd);
    fd = -1;
  }
};

std::set<uint32_t> FinishedPids(const SocketServer& server) {
  std::set<uint32_t> pids;
  for (const auto& trace : server.finished_traces()) pids.insert(trace->pid());
  return pids;
}

// The report built from the server's finished traces.
nlohmann::json Report(const SocketServer& server) {
  collector::ReportInputs inputs;
  inputs.capture.mode = "run";
  for (const auto& trace : server.finished_traces()) {
    inputs.processes.push_back(trace->TakeAnalysis());
  }
  return nlohmann::json::parse(collector::SerializeReport(collector::BuildReport(inputs)));
}

// The report's status of each process, by pid.
std::map<uint32_t, std::string> ReportStatuses(const SocketServer& server) {
  const nlohmann::json report = Report(server);
  std::map<uint32_t, std::string> statuses;
  for (const auto& process : report.at("processes")) {
    statuses[process.at("pid").get<uint32_t>()] = process.at("status").get<std::string>();
  }
  return statuses;
}

}  // namespace

TEST_CASE("a client that sends Hello, records and Goodbye becomes a finished trace with its pid",
          "[ingest]") {
  ServerFixture fixture;
  ClientFd client(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(client.fd, HelloMessage(4242, 0)));
  REQUIRE(SendDatagram(client.fd, RecordsMessage(1)));
  REQUIRE(SendDatagram(client.fd, GoodbyeMessage(2)));
  client.Close();

  REQUIRE(fixture.PumpUntil([&] { return fixture.server().finished_traces().size() == 1; }));
  const auto& trace = *fixture.server().finished_traces().front();
  CHECK(trace.has_hello());
  CHECK(trace.pid() == 4242);
  CHECK(fixture.server().open_connections() == 0);
  CHECK(fixture.server().stats().accepted_connections == 1);
  CHECK(fixture.server().stats().messages == 3);
  CHECK(fixture.server().stats().rejected_connections == 0);
  CHECK(fixture.server().stats().rejected_messages == 0);
  CHECK(ReportStatuses(fixture.server()) == std::map<uint32_t, std::string>{{4242, "complete"}});
}

TEST_CASE("bad clients are disconnected and counted while a good client beside them goes on",
          "[ingest]") {
  ServerFixture fixture;
  ClientFd good(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(good.fd, HelloMessage(100, 0)));

  ClientFd random_bytes(ConnectClient(fixture.socket_path()));
  std::mt19937 generator(1234);
  Datagram noise(300);
  for (uint8_t& byte : noise) byte = static_cast<uint8_t>(generator());
  REQUIRE(SendDatagram(random_bytes.fd, noise));

  ClientFd oversized(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(oversized.fd, HelloMessage(200, 0)));
  REQUIRE(SendDatagram(oversized.fd, PaddedMessage(1, wire::kMaxMessageBytes + 8)));

  ClientFd bad_header(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(bad_header.fd, HelloMessage(300, 0)));
  Datagram corrupt = RecordsMessage(1);
  corrupt[0] ^= 0xff;  // the message magic
  REQUIRE(SendDatagram(bad_header.fd, corrupt));

  REQUIRE(fixture.PumpUntil([&] { return fixture.server().stats().rejected_connections == 3; }));
  CHECK(fixture.server().stats().rejected_messages == 3);
  CHECK(fixture.server().stats().rejection_notes.size() == 3);
  CHECK(WaitForPeerClose(random_bytes.fd, 1000));
  CHECK(WaitForPeerClose(oversized.fd, 1000));
  CHECK(WaitForPeerClose(bad_header.fd, 1000));
  CHECK(fixture.server().open_connections() == 1);

  // The good client is untouched and finishes normally.
  REQUIRE(SendDatagram(good.fd, RecordsMessage(1)));
  REQUIRE(SendDatagram(good.fd, GoodbyeMessage(2)));
  good.Close();
  REQUIRE(fixture.PumpUntil([&] { return fixture.server().open_connections() == 0; }));
  // Connections cut for bad data keep what they sent before, as truncated; noise names no pid.
  CHECK(ReportStatuses(fixture.server()) ==
        std::map<uint32_t, std::string>{{100, "complete"}, {200, "truncated"}, {300, "truncated"}});
  CHECK(fixture.server().stats().messages == 5);  // 3 good, 1 before oversized, 1 before corrupt
}

TEST_CASE("a datagram of exactly kMaxMessageBytes is accepted and one word more is not",
          "[ingest]") {
  ServerFixture fixture;
  ClientFd client(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(client.fd, HelloMessage(7, 0)));
  REQUIRE(SendDatagram(client.fd, PaddedMessage(1, wire::kMaxMessageBytes)));
  REQUIRE(fixture.PumpUntil([&] { return fixture.server().stats().messages == 2; }));
  CHECK(fixture.server().stats().bytes >= wire::kMaxMessageBytes);
  CHECK(fixture.server().stats().rejected_messages == 0);

  REQUIRE(SendDatagram(client.fd, PaddedMessage(2, wire::kMaxMessageBytes + 8)));
  REQUIRE(fixture.PumpUntil([&] { return fixture.server().stats().rejected_messages == 1; }));
  CHECK(fixture.server().stats().messages == 2);
  CHECK(WaitForPeerClose(client.fd, 1000));
}

TEST_CASE("FinishAll ends open connections: a trace that said Hello is kept as truncated",
          "[ingest]") {
  ServerFixture fixture;
  ClientFd talker(ConnectClient(fixture.socket_path()));
  ClientFd silent(ConnectClient(fixture.socket_path()));
  REQUIRE(SendDatagram(talker.fd, HelloMessage(11, 0)));
  REQUIRE(SendDatagram(talker.fd, RecordsMessage(1)));
  REQUIRE(fixture.PumpUntil([&] {
    return fixture.server().open_connections() == 2 && fixture.server().stats().messages == 2;
  }));
  fixture.server().FinishAll();
  CHECK(fixture.server().open_connections() == 0);
  // The silent one is kept too, without a pid, for the report to count.
  CHECK(FinishedPids(fixture.server()) == std::set<uint32_t>{0, 11});
  CHECK(ReportStatuses(fixture.server()) == std::map<uint32_t, std::string>{{11, "truncated"}});
  CHECK(Report(fixture.server())["diagnostics"]["connections_without_hello"] == 1);
  CHECK(WaitForPeerClose(talker.fd, 1000));
  CHECK(WaitForPeerClose(silent.fd, 1000));
}

TEST_CASE("connections beyond max_connections are refused and counted", "[ingest]") {
  ServerOptions options;
  options.max_connections = 2;
  ServerFixture fixture(options);
  ClientFd first(ConnectClient(fixture.socket_path()));
  ClientFd second(ConnectClient(fixture.socket_path()));
  ClientFd third(ConnectClient(fixture.socket_path()));
  REQUIRE(fixture.PumpUntil([&] {
    const auto& stats = fixture.server().stats();
    return stats.accepted_connections + stats.rejected_connections == 3;
  }));
  CHECK(fixture.server().open_connections() == 2);
  CHECK(fixture.server().stats().rejected_connections == 1);
  CHECK(WaitForPeerClose(third.fd, 1000));
}

TEST_CASE("a peer running as another uid is refused", "[ingest][uid]") {
  // Needs root to become another user; CI runs the component tier as root.
  if (geteuid() != 0) {
    WARN("not root: cannot test a foreign uid");
    return;
  }
  ServerFixture fixture;
  // Open the doors the private directory normally keeps shut, so that only the SO_PEERCRED check
  // stands between the foreign peer and the collector.
  REQUIRE(chmod(fixture.dir().c_str(), 0755) == 0);
  REQUIRE(chmod(fixture.socket_path().c_str(), 0777) == 0);

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Exit status: 0 refused as expected, 1 setuid failed, 2 connect failed, 3 not closed.
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    const int fd = ConnectClient(fixture.socket_path());
    if (fd < 0) _exit(2);
    SendDatagram(fd, HelloMessage(static_cast<uint32_t>(getpid()), 0));
    _exit(WaitForPeerClose(fd, 5000) ? 0 : 3);
  }
  REQUIRE(fixture.PumpUntil([&] { return fixture.server().stats().rejected_connections == 1; }));
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fixture.server().stats().accepted_connections == 0);
  CHECK(fixture.server().finished_traces().empty());
  REQUIRE(fixture.server().stats().rejection_notes.size() == 1);
  CHECK_THAT(fixture.server().stats().rejection_notes[0], Catch::Contains("uid 65534"));
}

}  // namespace gpuattr::component
