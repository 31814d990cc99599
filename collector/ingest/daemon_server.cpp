#include "ingest/daemon_server.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "analysis/trace_builder.h"
#include "base/os.h"
#include "ingest/attach_session.h"
#include "ingest/daemon_connection.h"
#include "ingest/daemon_reports.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "wire/codec.h"

namespace gpuattr::collector {
namespace {

// Validates a datagram, once: every reading of it afterwards goes through this reader.
Status OpenMessage(wire::MessageReader& reader, const uint8_t* data, uint32_t size) {
  const wire::DecodeError error = reader.Open(data, size);
  if (error != wire::DecodeError::kNone) {
    return DataLossError(std::string("a malformed message (") + wire::DecodeErrorName(error) + ")");
  }
  return Status::Ok();
}

// Interning records. An armed connection may carry them outside windows (the shim defines what
// its registration Hello names, and whatever else it has interned by then); they are per logical
// stream, and a window's stream defines again what it uses, so the daemon reads past them.
bool IsDefinition(wire::RecordType type) {
  return type == wire::RecordType::kString || type == wire::RecordType::kPathNode ||
         type == wire::RecordType::kThreadName || type == wire::RecordType::kDevice;
}

// Outside a window only definitions, a Goodbye and record types this daemon does not know
// (skipped by size, as everywhere) may come.
Status CheckBetweenWindows(wire::MessageReader& reader) {
  wire::RecordView record;
  while (reader.Next(&record)) {
    if (IsDefinition(record.type) || record.type == wire::RecordType::kGoodbye ||
        wire::MinBodyBytes(record.type) == 0) {
      continue;
    }
    return DataLossError("outside a window an armed process sent a record of type " +
                         std::to_string(static_cast<uint32_t>(record.type)) +
                         " (only definitions and Goodbye may come)");
  }
  return Status::Ok();
}

}  // namespace

// ---- State ---------------------------------------------------------------------------------

class DaemonServer::Handler : public ConnectionHandler {
 public:
  Handler(DaemonServer* daemon, uint64_t connection_id)
      : daemon_(daemon), connection_id_(connection_id) {}
  Status Consume(const uint8_t* data, uint32_t size) override {
    return daemon_->Consume(connection_id_, data, size);
  }
  void End(EndReason reason) override {
    daemon_->End(connection_id_, reason == EndReason::kRejected);
  }

 private:
  DaemonServer* daemon_;
  uint64_t connection_id_;
};

// ---- Setup ---------------------------------------------------------------------------------

StatusOr<std::unique_ptr<DaemonServer>> DaemonServer::Listen(const std::string& socket_path,
                                                             DaemonOptions options) {
  std::unique_ptr<DaemonServer> daemon(new DaemonServer(std::move(options)));
  ServerOptions server_options;
  DaemonServer* self = daemon.get();
  server_options.handler_factory = [self](const PeerInfo& peer) {
    Connection connection;
    connection.peer = peer;
    connection.accepted_ns = NowNs(CLOCK_MONOTONIC);
    connection.accepted_realtime_ns = NowNs(CLOCK_REALTIME);
    self->connections_.emplace(peer.connection_id, std::move(connection));
    return std::make_unique<Handler>(self, peer.connection_id);
  };
  GPUATTR_ASSIGN_OR_RETURN(daemon->server_, SocketServer::Listen(socket_path, server_options));
  return daemon;
}

DaemonServer::DaemonServer(DaemonOptions options)
    : options_(std::move(options)), reports_(options_.reports_dir, options_.analysis) {}

DaemonServer::~DaemonServer() = default;

int DaemonServer::fd() const { return server_->fd(); }

const IngestStats& DaemonServer::ingest_stats() const { return server_->stats(); }

size_t DaemonServer::armed_processes() const {
  return static_cast<size_t>(std::count_if(
      connections_.begin(), connections_.end(),
      [](const auto& entry) { return entry.second.role == Connection::Role::kArmed; }));
}

Status DaemonServer::Service(int timeout_ms) {
  GPUATTR_RETURN_IF_ERROR(server_->Service(timeout_ms));
  LogNewRejections();
  RunTimers(NowNs(CLOCK_MONOTONIC));
  return Status::Ok();
}

// ---- Connections ---------------------------------------------------------------------------

Status DaemonServer::Consume(uint64_t connection_id, const uint8_t* data, uint32_t size) {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return InternalError("a datagram for an unknown connection");
  Connection& connection = it->second;
  wire::MessageReader reader;
  GPUATTR_RETURN_IF_ERROR(OpenMessage(reader, data, size));
  switch (connection.role) {
    case Connection::Role::kUnknown:
      return ConsumeFirst(connection, reader);
    case Connection::Role::kTraced:
      return connection.trace->ConsumeValidated(reader);
    case Connection::Role::kArmed:
      return ConsumeArmed(connection, reader);
    case Connection::Role::kAttachClient:
      return DataLossError("an attach client sends one request and waits for the reply");
  }
  return InternalError("a connection in no known role");
}

Status DaemonServer::ConsumeFirst(Connection& connection, wire::MessageReader& reader) {
  wire::RecordView first;
  if (!reader.Next(&first)) return DataLossError("the connection's first message has no records");

  if (first.type == wire::RecordType::kAttachRequest) {
    const auto request = first.As<wire::AttachRequest>();
    std::string step_name;
    bool step_name_defined = false;
    wire::RecordView record;
    while (reader.Next(&record)) {
      if (record.type == wire::RecordType::kString &&
          record.As<wire::String>().id == request.step_name_string && request.step_name_string) {
        step_name = std::string(record.StringText());
        step_name_defined = true;
      } else if (record.type != wire::RecordType::kString && wire::MinBodyBytes(record.type)) {
        return DataLossError("an attach request carries a record other than String");
      }
    }
    if (request.step_name_string != 0 && !step_name_defined) {
      return DataLossError("the attach request names a step String it does not define");
    }
    connection.role = Connection::Role::kAttachClient;
    return StartAttach(connection, request, step_name);
  }
  if (first.type != wire::RecordType::kHello) {
    return DataLossError("the connection's first record is neither a Hello nor an AttachRequest");
  }
  const auto hello = first.As<wire::Hello>();
  GPUATTR_RETURN_IF_ERROR(HelloStatus(hello));
  switch (static_cast<wire::HelloMode>(hello.mode)) {
    case wire::HelloMode::kTraced:
      connection.role = Connection::Role::kTraced;
      connection.trace = std::make_unique<ProcessTrace>(options_.analysis);
      reader.Rewind();
      return connection.trace->ConsumeValidated(reader);
    case wire::HelloMode::kArmed:
      break;
    case wire::HelloMode::kWindow:
      return DataLossError("a window stream on a connection that did not register as armed");
  }
  // Registration. The pid is the one the kernel saw connect: a process cannot arm another.
  if (hello.pid != connection.peer.pid) {
    return DataLossError("the armed Hello says pid " + std::to_string(hello.pid) +
                         ", the socket's peer is pid " + std::to_string(connection.peer.pid));
  }
  GPUATTR_RETURN_IF_ERROR(CheckBetweenWindows(reader));
  connection.role = Connection::Role::kArmed;
  connection.pid = hello.pid;
  connection.rank = hello.rank;
  ++stats_.registrations;
  Log("pid " + std::to_string(hello.pid) +
      (hello.rank >= 0 ? " (rank " + std::to_string(hello.rank) + ")" : std::string()) +
      " is armed");
  return Status::Ok();
}

Status DaemonServer::ConsumeArmed(Connection& connection, wire::MessageReader& reader) {
  if (connection.stream == Connection::Stream::kNone) {
    wire::RecordView first;
    if (!reader.Next(&first)) return DataLossError("an empty message between windows");
    if (first.type != wire::RecordType::kHello) {
      reader.Rewind();
      GPUATTR_RETURN_IF_ERROR(CheckBetweenWindows(reader));
      reader.Rewind();
      while (reader.Next(&first)) {
        if (first.type == wire::RecordType::kGoodbye) connection.said_goodbye = true;
      }
      return Status::Ok();
    }
    const auto hello = first.As<wire::Hello>();
    GPUATTR_RETURN_IF_ERROR(HelloStatus(hello));
    if (hello.mode != static_cast<uint32_t>(wire::HelloMode::kWindow) ||
        hello.pid != connection.pid) {
      return DataLossError("a Hello between windows that is not a window's Hello of pid " +
                           std::to_string(connection.pid));
    }
    if (connection.attach_number != 0) {
      connection.stream = Connection::Stream::kFeeding;
      connection.window_trace = std::make_unique<ProcessTrace>(options_.analysis);
    } else {
      // Nobody waits for it any more (its attach gave up on it): read it and drop it.
      connection.stream = Connection::Stream::kDiscarding;
    }
    reader.Rewind();
  }

  if (connection.stream == Connection::Stream::kFeeding) {
    GPUATTR_RETURN_IF_ERROR(connection.window_trace->ConsumeValidated(reader));
    reader.Rewind();
  }
  wire::RecordView record;
  while (reader.Next(&record)) {
    if (record.type == wire::RecordType::kWindowBegin &&
        connection.stream == Connection::Stream::kFeeding) {
      const auto begin = record.As<wire::WindowBegin>();
      if (begin.window_id != connection.window_id) {
        return DataLossError("WindowBegin names window " + std::to_string(begin.window_id) +
                             ", the open request was for window " +
                             std::to_string(connection.window_id));
      }
      auto attach = attaches_.find(connection.attach_number);
      if (attach == attaches_.end()) continue;
      attach->second.WindowBegun(connection.peer.connection_id, begin.timestamp_ns,
                                 NowNs(CLOCK_MONOTONIC));
    } else if (record.type == wire::RecordType::kWindowEnd) {
      const bool feeding = connection.stream == Connection::Stream::kFeeding;
      connection.stream = Connection::Stream::kNone;
      if (feeding) EndWindow(connection, std::move(connection.window_trace), "");
      break;  // the stream ends here; nothing may follow in its message
    }
  }
  return Status::Ok();
}

void DaemonServer::End(uint64_t connection_id, bool rejected) {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return;
  Connection& connection = it->second;
  switch (connection.role) {
    case Connection::Role::kTraced:
      FinishTraced(connection);
      break;
    case Connection::Role::kArmed:
      if (connection.attach_number != 0) {
        const bool feeding = connection.stream == Connection::Stream::kFeeding;
        EndWindow(connection, feeding ? std::move(connection.window_trace) : nullptr,
                  feeding ? (rejected ? "its connection was closed for a protocol violation"
                                      : "the connection closed inside the window")
                          : "the connection closed before the window began");
      }
      Log("pid " + std::to_string(connection.pid) + " is no longer armed");
      break;
    case Connection::Role::kAttachClient: {
      // The attach this client waits for, if any is still open: its windows are closed now and
      // its report is written when they have ended, with nobody to answer.
      auto attach = std::find_if(attaches_.begin(), attaches_.end(), [&](const auto& entry) {
        return entry.second.client_connection_id() == connection.peer.connection_id;
      });
      if (attach != attaches_.end()) {
        for (const auto& close : attach->second.ClientGone(NowNs(CLOCK_MONOTONIC))) {
          SendClose(close);
        }
      }
      break;
    }
    case Connection::Role::kUnknown:
      break;
  }
  connections_.erase(connection_id);
}

// ---- Traced processes ----------------------------------------------------------------------

void DaemonServer::FinishTraced(Connection& connection) {
  if (!connection.trace || !connection.trace->has_hello()) return;
  connection.trace->Finish(NowNs(CLOCK_MONOTONIC));
  const uint32_t pid = connection.trace->pid();
  StatusOr<std::string> path = reports_.WriteTraced(*connection.trace, connection.accepted_ns,
                                                    connection.accepted_realtime_ns);
  connection.trace.reset();
  if (!path.ok()) {
    ++stats_.report_failures;
    Log("cannot write the report of pid " + std::to_string(pid) + ": " + path.status().message());
    return;
  }
  ++stats_.traced_reports;
  Log("report written to " + *path);
}

// ---- Shutdown and odds and ends ------------------------------------------------------------

void DaemonServer::Shutdown() {
  // What is already queued was sent before the end.
  Status served = server_->Service(0);
  if (!served.ok()) Log(served.message());
  std::vector<uint64_t> numbers;
  for (const auto& [number, attach] : attaches_) numbers.push_back(number);
  for (uint64_t number : numbers) {
    auto attach = attaches_.find(number);
    if (attach == attaches_.end()) continue;
    const uint64_t now = NowNs(CLOCK_MONOTONIC);
    for (const AttachSession::Close& close :
         attach->second.CloseAll(now, "the daemon is shutting down")) {
      SendClose(close);
    }
    std::vector<uint64_t> open;
    for (const AttachSession::Window& window : attach->second.windows()) {
      if (!window.ended) open.push_back(window.connection_id);
    }
    for (uint64_t connection_id : open) {
      auto it = connections_.find(connection_id);
      if (it == connections_.end()) continue;
      Connection& armed = it->second;
      if (armed.attach_number != number) continue;
      const bool feeding = armed.stream == Connection::Stream::kFeeding;
      if (feeding) armed.stream = Connection::Stream::kDiscarding;
      EndWindow(armed, feeding ? std::move(armed.window_trace) : nullptr,
                "the daemon shut down inside the window");
    }
  }
  server_->FinishAll();
  LogNewRejections();
}

void DaemonServer::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void DaemonServer::LogNewRejections() {
  const auto& notes = server_->stats().rejection_notes;
  for (; rejection_notes_logged_ < notes.size(); ++rejection_notes_logged_) {
    Log(notes[rejection_notes_logged_]);
  }
}

}  // namespace gpuattr::collector
