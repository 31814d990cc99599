// DaemonServer: what `gpuattr daemon` does with its connections (docs/attach.md). It owns a
// SocketServer whose handler tells each connection's role apart by the first record of its first
// message, and it runs the attach orchestration between them.
//
//   Hello{mode=traced}  a process traced from its start: a streaming ProcessTrace, as under
//                       `gpuattr run`; when the connection ends its report is written
//   Hello{mode=armed}   a registration (pid checked against SO_PEERCRED): the process is armed.
//                       Later messages whose first record is Hello{mode=window} begin a window
//                       stream, fed to a fresh ProcessTrace until WindowEnd (or the connection
//                       ends: truncated); outside windows only definitions and a Goodbye may come
//   AttachRequest       an attach client (daemon_attach.cpp): the selected armed processes,
//                       less those --all and --rank pass over for never having loaded the CUDA
//                       driver, get Control{kOpenWindow}; duration windows get
//                       Control{kCloseWindow} when the duration has passed since their WindowBegin
//                       (since the open request when no WindowBegin came); steps windows end by
//                       themselves. When every selected window has ended, one report over their
//                       traces is written and the client gets AttachReply{kDone, report path}
//   anything else       a protocol violation: the connection is closed and counted
//
//   attach client --AttachRequest--> daemon --Control{open}--> armed shim
//                                     daemon <--Hello{window} WindowBegin ... WindowEnd--
//                                     daemon --Control{close}--> (duration windows)
//   attach client <--AttachReply------ daemon  (report written into reports_dir)
//
// Bounds a window cannot outlive: the attach timeout (DaemonOptions::attach_timeout_ns, counted
// from the request; AttachRequest has no field for it, so it is the daemon's --attach-timeout),
// after which its process gets Control{kCloseWindow}; and the close grace: a window whose
// WindowEnd has not come close_grace_ns after its Control{kCloseWindow} ends truncated without
// it (the rest of its stream is read and dropped). A window whose connection closes ends
// truncated. An attach client that goes away early has its windows closed; the report is
// written all the same.
//
// The attach state machine is AttachSession's (attach_session.h); report files are named and
// written by DaemonReports (daemon_reports.h). This class dispatches connections by role,
// demultiplexes armed connections' window streams, and carries out what the sessions ask.
//
// Threading: none of its own. The owner's thread waits on fd() and the timer (NextTimerMs) and
// calls Service(); everything, handlers included, runs there. Memory: bounded by work in flight:
// open streams (each ProcessTrace bounds itself) and the finished window traces of attaches
// still waiting for their other windows.
#ifndef GPUATTR_COLLECTOR_INGEST_DAEMON_SERVER_H_
#define GPUATTR_COLLECTOR_INGEST_DAEMON_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "ingest/attach_session.h"
#include "ingest/daemon_reports.h"
#include "ingest/socket_server.h"
#include "report/report_builder.h"
#include "wire/codec.h"
#include "wire/protocol.h"

namespace gpuattr::collector {

struct DaemonOptions {
  std::string reports_dir;  // exists and is writable (the caller checked)
  AnalysisOptions analysis;
  uint64_t attach_timeout_ns = 600'000'000'000;  // from the request until its windows close
  uint64_t close_grace_ns = 5'000'000'000;       // from Control{kCloseWindow} to giving up
  // One line per event worth telling (a report written, a registration, a refused client);
  // unset: silent. Called on the daemon's thread.
  std::function<void(const std::string&)> log;
};

struct DaemonStats {
  uint64_t traced_reports = 0;  // reports of traced (whole-process) connections
  uint64_t attach_reports = 0;
  uint64_t report_failures = 0;  // reports that could not be written
  uint64_t registrations = 0;    // armed processes registered
  uint64_t attach_requests = 0;
};

class DaemonServer {
 public:
  // Listens at `socket_path` (ClaimDaemonSocket has made it ready).
  static StatusOr<std::unique_ptr<DaemonServer>> Listen(const std::string& socket_path,
                                                        DaemonOptions options);
  ~DaemonServer();
  DaemonServer(const DaemonServer&) = delete;
  DaemonServer& operator=(const DaemonServer&) = delete;

  // Readable when Service() has socket work to do.
  int fd() const;
  // Milliseconds until the next window timer is due: -1 when none is, 0 when one is overdue.
  int NextTimerMs() const;
  // Waits up to `timeout_ms` for socket work, serves it, then runs the timers that are due.
  Status Service(int timeout_ms);

  // Ends everything, for the daemon's exit: open windows end truncated and their attaches are
  // reported (and answered while their client is there); traced streams end truncated and are
  // reported. The socket is unlinked when the object goes.
  void Shutdown();

  const IngestStats& ingest_stats() const;
  const DaemonStats& stats() const { return stats_; }
  size_t armed_processes() const;

 private:
  class Handler;
  struct Connection;

  explicit DaemonServer(DaemonOptions options);

  Status Consume(uint64_t connection_id, const uint8_t* data, uint32_t size);
  void End(uint64_t connection_id, bool rejected);

  Status ConsumeFirst(Connection& connection, wire::MessageReader& reader);
  Status ConsumeArmed(Connection& connection, wire::MessageReader& reader);
  Status StartAttach(Connection& client, const wire::AttachRequest& request,
                     const std::string& step_name);
  void FinishTraced(Connection& connection);
  // The window of `armed` ended; `trace` is its stream (null when none began).
  void EndWindow(Connection& armed, std::unique_ptr<ProcessTrace> trace, const std::string& why);
  void SendClose(const AttachSession::Close& close);
  void CompleteAttachIfDone(uint64_t attach_number);
  void RunTimers(uint64_t now_ns);
  void Reply(uint64_t connection_id, wire::AttachStatus status, uint32_t processes,
             const std::string& report_path, const std::string& message);
  Status SendMessage(Connection& connection, const std::vector<uint8_t>& datagram);
  void Log(const std::string& line) const;
  void LogNewRejections();

  DaemonOptions options_;
  DaemonReports reports_;
  std::unique_ptr<SocketServer> server_;
  std::map<uint64_t, Connection> connections_;  // by connection id
  std::map<uint64_t, AttachSession> attaches_;  // by attach number, until reported
  uint64_t next_attach_number_ = 1;
  uint32_t next_window_id_ = 1;
  size_t rejection_notes_logged_ = 0;
  DaemonStats stats_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_DAEMON_SERVER_H_
