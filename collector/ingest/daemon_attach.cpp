// DaemonServer's attach requests (daemon_server.h): a client's AttachRequest opens a window in
// each armed process it selects, timers close duration windows and give up on silent ones, and
// once every window has ended the report is written and the client answered. --all and --rank
// pass over processes that never loaded the CUDA driver (collector/ptrace/process_tree.h), and
// the answer names them. Runs on the daemon's one thread, as the rest of DaemonServer.
#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <utility>

#include "base/os.h"
#include "ingest/attach_session.h"
#include "ingest/daemon_connection.h"
#include "ingest/daemon_reports.h"
#include "ingest/daemon_server.h"
#include "ptrace/process_tree.h"
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

constexpr uint32_t kStepNameString = 1;  // the String id of a Control's step name

// Removes the processes whose maps show no CUDA driver (one that cannot be read stays: it may
// live in another PID namespace) and names them: "skipped pid 12, pid 13 (no CUDA driver
// loaded)", or empty.
template <typename ConnectionPointer>
std::string DropProcessesWithoutCuda(std::vector<ConnectionPointer>& chosen) {
  std::string skipped;
  std::erase_if(chosen, [&skipped](const ConnectionPointer connection) {
    if (HasCudaDriver(static_cast<pid_t>(connection->pid)).value_or(true)) return false;
    skipped += (skipped.empty() ? "skipped pid " : ", pid ") + std::to_string(connection->pid);
    return true;
  });
  return skipped.empty() ? skipped : skipped + " (no CUDA driver loaded)";
}

}  // namespace

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
  const std::string skipped =
      selector == wire::AttachSelector::kPid ? "" : DropProcessesWithoutCuda(chosen);
  if (chosen.empty()) {
    Reply(client_id, wire::AttachStatus::kRequiresShim, 0, "",
          "no armed process registered with this daemon matches " + what +
              (skipped.empty() ? "" : "; " + skipped));
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
  attach.NoteSkipped(skipped);
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

}  // namespace gpuattr::collector
