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
#include "ingest/daemon_reports.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "wire/codec.h"

namespace gpuattr::collector {
namespace {

template <typename Fill>
std::vector<uint8_t> BuildDatagram(uint64_t sequence, Fill fill) {
  std::vector<uint8_t> buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  fill(writer);
  buffer.resize(writer.Finish(sequence));
  return buffer;
}

// Validates a datagram, once: every reading of it afterwards goes through this reader.
Status OpenMessage(wire::MessageReader& reader, const uint8_t* data, uint32_t size) {
  const wire::DecodeError error = reader.Open(data, size);
  if (error != wire::DecodeError::kNone) {
    return DataLossError(std::string("a malformed message (") + wire::DecodeErrorName(error) + ")");
  }
  return Status::Ok();
}

constexpr uint32_t kStepNameString = 1;  // the String id of a Control's step name

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

struct DaemonServer::Connection {
  enum class Role { kUnknown, kTraced, kArmed, kAttachClient };
  enum class Stream { kNone, kFeeding, kDiscarding };  // an armed connection's window stream

  PeerInfo peer;
  Role role = Role::kUnknown;
  uint64_t accepted_ns = 0;
  uint64_t accepted_realtime_ns = 0;
  uint64_t sequence_out = 0;  // messages we sent on it

  std::unique_ptr<ProcessTrace> trace;  // kTraced

  // kArmed: who registered, and the window it was asked for (attach_number 0: none).
  uint32_t pid = 0;
  int32_t rank = -1;
  uint32_t windows_opened = 0;
  uint64_t attach_number = 0;
  uint32_t window_id = 0;
  Stream stream = Stream::kNone;
  std::unique_ptr<ProcessTrace> window_trace;  // while kFeeding
  bool said_goodbye = false;
};

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

// ---- Attach --------------------------------------------------------------------------------

Status DaemonServer::StartAttach(Connection& client, const wire::AttachRequest& request,
                                 const std::string& step_name) {
  ++stats_.attach_requests;
  const uint64_t client_id = client.peer.connection_id;
  const auto selector = static_cast<wire::AttachSelector>(request.selector);
  std::string invalid;
  if (selector != wire::AttachSelector::kPid && selector != wire::AttachSelector::kAll &&
      selector != wire::AttachSelector::kRank) {
    invalid = "unknown selector " + std::to_string(request.selector);
  } else if ((request.duration_ns > 0) == (request.steps > 0)) {
    invalid = "give either a duration or a number of steps";
  } else if (request.step_name_string != 0 && request.steps == 0) {
    invalid = "a step name needs a number of steps";
  } else if (selector != wire::AttachSelector::kAll && request.value < 0) {
    invalid = "a negative pid or rank";
  }
  if (!invalid.empty()) {
    Reply(client_id, wire::AttachStatus::kFailed, 0, "", "invalid attach request: " + invalid);
    return Status::Ok();
  }

  std::vector<Connection*> chosen;
  for (auto& [id, connection] : connections_) {
    if (connection.role != Connection::Role::kArmed || connection.said_goodbye) continue;
    const bool selected =
        selector == wire::AttachSelector::kAll ||
        (selector == wire::AttachSelector::kPid &&
         connection.pid == static_cast<uint32_t>(request.value)) ||
        (selector == wire::AttachSelector::kRank && connection.rank == request.value);
    if (selected) chosen.push_back(&connection);
  }
  const std::string what =
      selector == wire::AttachSelector::kPid    ? "pid " + std::to_string(request.value)
      : selector == wire::AttachSelector::kRank ? "rank " + std::to_string(request.value)
                                                : "any process";
  if (chosen.empty()) {
    Reply(client_id, wire::AttachStatus::kRequiresShim, 0, "",
          "no armed process registered with this daemon matches " + what);
    return Status::Ok();
  }
  for (const Connection* connection : chosen) {
    if (connection->attach_number != 0 || connection->stream != Connection::Stream::kNone) {
      Reply(client_id, wire::AttachStatus::kBusy, 0, "",
            "pid " + std::to_string(connection->pid) + " already has a capture window open");
      return Status::Ok();
    }
  }

  const uint64_t number = next_attach_number_++;
  AttachSession attach(number, client_id, request, step_name, NowNs(CLOCK_MONOTONIC),
                       NowNs(CLOCK_REALTIME),
                       {options_.attach_timeout_ns, options_.close_grace_ns});
  for (Connection* connection : chosen) {
    const uint32_t window_id = next_window_id_++;
    if (next_window_id_ == 0) next_window_id_ = 1;
    const uint32_t attach_index = ++connection->windows_opened;
    const uint64_t open_ns = NowNs(CLOCK_MONOTONIC);
    wire::Control control{};
    control.command = static_cast<uint32_t>(wire::ControlCommand::kOpenWindow);
    control.window_id = window_id;
    control.trigger = static_cast<uint32_t>(request.steps > 0 ? wire::WindowTrigger::kSteps
                                                              : wire::WindowTrigger::kNow);
    control.steps = request.steps;
    control.step_name_string = step_name.empty() ? 0 : kStepNameString;
    const Status sent = SendMessage(
        *connection, BuildDatagram(connection->sequence_out, [&](wire::MessageWriter& writer) {
          writer.Append(control);
          if (!step_name.empty()) writer.AppendString(kStepNameString, step_name);
        }));
    if (sent.ok()) {
      connection->attach_number = number;
      connection->window_id = window_id;
    }
    attach.AddWindow(connection->peer.connection_id, connection->pid, window_id, attach_index,
                     open_ns, sent.ok() ? "" : sent.message());
  }
  Log("attach " + std::to_string(number) + ": opening " + std::to_string(attach.windows().size()) +
      " window(s) for " + what);
  attaches_.emplace(number, std::move(attach));
  CompleteAttachIfDone(number);
  return Status::Ok();
}

void DaemonServer::EndWindow(Connection& armed, std::unique_ptr<ProcessTrace> trace,
                             const std::string& why) {
  const uint64_t number = armed.attach_number;
  armed.attach_number = 0;
  armed.window_id = 0;
  auto attach = attaches_.find(number);
  if (attach == attaches_.end()) return;
  attach->second.WindowEnded(armed.peer.connection_id, std::move(trace), why,
                             NowNs(CLOCK_MONOTONIC));
  CompleteAttachIfDone(number);
}

void DaemonServer::SendClose(const AttachSession::Close& close) {
  auto it = connections_.find(close.connection_id);
  if (it == connections_.end()) return;
  wire::Control control{};
  control.command = static_cast<uint32_t>(wire::ControlCommand::kCloseWindow);
  control.window_id = close.window_id;
  const Status sent = SendMessage(
      it->second, BuildDatagram(it->second.sequence_out,
                                [&](wire::MessageWriter& writer) { writer.Append(control); }));
  if (!sent.ok()) {
    Log("cannot close the window of pid " + std::to_string(close.pid) + " (" + close.why +
        "): " + sent.message());
  }
}

void DaemonServer::RunTimers(uint64_t now_ns) {
  std::vector<uint64_t> numbers;
  for (const auto& [number, attach] : attaches_) numbers.push_back(number);
  for (uint64_t number : numbers) {
    AttachSession& attach = attaches_.at(number);
    AttachSession::Due due = attach.Tick(now_ns);
    for (const AttachSession::Close& close : due.closes) SendClose(close);
    for (const AttachSession::GiveUp& give_up : due.give_ups) {
      // The window ends without its WindowEnd; the rest of its stream is read and dropped.
      std::unique_ptr<ProcessTrace> trace;
      auto it = connections_.find(give_up.connection_id);
      if (it != connections_.end()) {
        Connection& armed = it->second;
        if (armed.stream == Connection::Stream::kFeeding) {
          trace = std::move(armed.window_trace);
          armed.stream = Connection::Stream::kDiscarding;
        }
        armed.attach_number = 0;
        armed.window_id = 0;
      }
      attach.WindowEnded(give_up.connection_id, std::move(trace), give_up.why, now_ns);
    }
    CompleteAttachIfDone(number);
  }
}

int DaemonServer::NextTimerMs() const {
  uint64_t next = UINT64_MAX;
  for (const auto& [number, attach] : attaches_) {
    if (const std::optional<uint64_t> due = attach.NextDueNs()) next = std::min(next, *due);
  }
  if (next == UINT64_MAX) return -1;
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  if (next <= now) return 0;
  const uint64_t ms = (next - now + 999999) / 1000000;
  return ms > static_cast<uint64_t>(INT_MAX) ? INT_MAX : static_cast<int>(ms);
}

void DaemonServer::CompleteAttachIfDone(uint64_t attach_number) {
  auto it = attaches_.find(attach_number);
  if (it == attaches_.end() || !it->second.done()) return;
  AttachSession attach = std::move(it->second);
  attaches_.erase(it);

  const auto processes = static_cast<uint32_t>(attach.windows_with_data());
  const std::string notes = attach.EndNotes();
  const StatusOr<std::string> path = reports_.WriteAttach(attach);
  if (!path.ok()) {
    ++stats_.report_failures;
    Log("attach " + std::to_string(attach.number()) + ": " + path.status().message());
    Reply(attach.client_connection_id(), wire::AttachStatus::kFailed, 0, "",
          "the daemon cannot write the report: " + path.status().message());
    return;
  }
  ++stats_.attach_reports;
  Log("attach " + std::to_string(attach.number()) + ": report written to " + *path +
      (notes.empty() ? "" : " (" + notes + ")"));
  Reply(attach.client_connection_id(), wire::AttachStatus::kDone, processes, *path,
        std::to_string(processes) + " of " + std::to_string(attach.windows().size()) +
            " window(s) captured" + (notes.empty() ? "" : "; " + notes));
}

void DaemonServer::Reply(uint64_t connection_id, wire::AttachStatus status, uint32_t processes,
                         const std::string& report_path, const std::string& message) {
  auto it = connections_.find(connection_id);
  if (connection_id == 0 || it == connections_.end()) return;
  constexpr uint32_t kPathString = 1;
  constexpr uint32_t kMessageString = 2;
  wire::AttachReply reply{};
  reply.status = static_cast<uint32_t>(status);
  reply.processes = processes;
  reply.report_path_string = report_path.empty() ? 0 : kPathString;
  reply.message_string = message.empty() ? 0 : kMessageString;
  const Status sent = SendMessage(
      it->second, BuildDatagram(it->second.sequence_out, [&](wire::MessageWriter& writer) {
        writer.Append(reply);
        if (!report_path.empty()) writer.AppendString(kPathString, report_path);
        if (!message.empty()) writer.AppendString(kMessageString, message);
      }));
  if (!sent.ok()) Log("cannot answer an attach client: " + sent.message());
}

Status DaemonServer::SendMessage(Connection& connection, const std::vector<uint8_t>& datagram) {
  ++connection.sequence_out;
  return server_->Send(connection.peer.connection_id, datagram.data(),
                       static_cast<uint32_t>(datagram.size()));
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
