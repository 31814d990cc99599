// AttachSession: one `gpuattr attach` request inside the daemon (docs/attach.md), as a pure state
// machine: the daemon feeds it events with the time they happened (now_ns, CLOCK_MONOTONIC) and
// carries out what it answers (sending Control{kCloseWindow}, dropping a window's stream). No
// socket, no clock and no I/O here, so every timer rule is tested without either.
//
//   opened ──WindowBegun──▶ begun ──duration passed / timeout / client gone──▶ close sent
//     │                       │                                                  │
//     └───────────────────────┴──WindowEnded (its WindowEnd, or its connection)──┤
//                                                                                ▼
//                           ended ◀── no WindowEnd within the close grace (given up)
//
// A duration window's close is due `duration` after its WindowBegin (after the open request when
// no WindowBegin came; a begin time outside [open, now] is not believed); a steps window ends by
// itself. Every window's close is due at the attach timeout, counted from the request. The
// session is done when every window has ended; its windows' traces are then the report's.
//
// Single-threaded: the daemon's thread.
#ifndef GPUATTR_COLLECTOR_INGEST_ATTACH_SESSION_H_
#define GPUATTR_COLLECTOR_INGEST_ATTACH_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "wire/protocol.h"

namespace gpuattr::collector {

struct AttachTimeouts {
  uint64_t attach_ns = 600'000'000'000;     // from the request until its windows close
  uint64_t close_grace_ns = 5'000'000'000;  // from Control{kCloseWindow} to giving up
};

class AttachSession {
 public:
  // One window of the attach: a process's connection and what it was asked.
  struct Window {
    uint64_t connection_id = 0;
    uint32_t pid = 0;
    uint32_t window_id = 0;
    uint32_t attach_index = 0;  // the how-manieth window of that process this is (1-based)
    uint64_t open_sent_ns = 0;
    uint64_t close_due_ns = 0;  // duration windows; 0: the window ends by itself
    bool begin_seen = false;
    bool close_sent = false;
    uint64_t close_sent_ns = 0;
    bool ended = false;
    std::string end_note;                 // why it ended other than by its WindowEnd
    std::unique_ptr<ProcessTrace> trace;  // its stream, once ended (null: none began)
  };
  // What a tick asks of the daemon.
  struct Close {
    uint64_t connection_id = 0;
    uint32_t window_id = 0;
    uint32_t pid = 0;
    std::string why;  // for the log
  };
  struct GiveUp {
    uint64_t connection_id = 0;  // its stream from now on is read and dropped
    std::string why;
  };
  struct Due {
    std::vector<Close> closes;
    std::vector<GiveUp> give_ups;  // pass each to WindowEnded with the stream's trace
  };

  AttachSession(uint64_t number, uint64_t client_connection_id, const wire::AttachRequest& request,
                std::string step_name, uint64_t requested_ns, uint64_t requested_realtime_ns,
                AttachTimeouts timeouts);

  // A window opened on `connection_id` at `now_ns`. `open_error` non-empty: the open request
  // could not be sent, and the window has ended with it.
  void AddWindow(uint64_t connection_id, uint32_t pid, uint32_t window_id, uint32_t attach_index,
                 uint64_t now_ns, const std::string& open_error);
  // The process's WindowBegin, stamped `begin_ns` by its clock (the daemon's: one host).
  void WindowBegun(uint64_t connection_id, uint64_t begin_ns, uint64_t now_ns);
  // The window on `connection_id` ended at `now_ns`: `trace` is its stream (null when none
  // began), `why` is empty when it ended by its WindowEnd.
  void WindowEnded(uint64_t connection_id, std::unique_ptr<ProcessTrace> trace,
                   const std::string& why, uint64_t now_ns);
  // The client went away: the windows to close now; the report is still made.
  std::vector<Close> ClientGone(uint64_t now_ns);
  // Every window still open is closed now (the daemon shuts down).
  std::vector<Close> CloseAll(uint64_t now_ns, const std::string& why);
  // What is due at `now_ns`.
  Due Tick(uint64_t now_ns);
  // When the next timer is due; empty when none is.
  std::optional<uint64_t> NextDueNs() const;

  // Every window has ended.
  bool done() const;
  // "pid 12: its connection closed inside the window; pid 13: no window data": what happened
  // other than a clean end; empty when nothing did.
  std::string EndNotes() const;
  // The windows that carried a stream.
  size_t windows_with_data() const;
  // What the selector passed over (processes without the CUDA driver), first in EndNotes.
  void NoteSkipped(std::string note) { skipped_note_ = std::move(note); }

  uint64_t number() const { return number_; }
  uint64_t client_connection_id() const { return client_connection_id_; }
  const wire::AttachRequest& request() const { return request_; }
  const std::string& step_name() const { return step_name_; }
  uint64_t requested_ns() const { return requested_ns_; }
  uint64_t requested_realtime_ns() const { return requested_realtime_ns_; }
  std::vector<Window>& windows() { return windows_; }

 private:
  Window* OpenWindowOf(uint64_t connection_id);
  void MarkCloseSent(Window& window, uint64_t now_ns, const std::string& why,
                     std::vector<Close>* closes);

  uint64_t number_;
  uint64_t client_connection_id_;  // 0 once the client went away
  wire::AttachRequest request_;
  std::string step_name_;
  uint64_t requested_ns_;
  uint64_t requested_realtime_ns_;
  uint64_t deadline_ns_;
  AttachTimeouts timeouts_;
  std::vector<Window> windows_;
  std::string skipped_note_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_ATTACH_SESSION_H_
