#include "ingest/attach_session.h"

#include <algorithm>
#include <utility>

namespace gpuattr::collector {

AttachSession::AttachSession(uint64_t number, uint64_t client_connection_id,
                             const wire::AttachRequest& request, std::string step_name,
                             uint64_t requested_ns, uint64_t requested_realtime_ns,
                             AttachTimeouts timeouts)
    : number_(number),
      client_connection_id_(client_connection_id),
      request_(request),
      step_name_(std::move(step_name)),
      requested_ns_(requested_ns),
      requested_realtime_ns_(requested_realtime_ns),
      deadline_ns_(requested_ns + timeouts.attach_ns),
      timeouts_(timeouts) {}

void AttachSession::AddWindow(uint64_t connection_id, uint32_t pid, uint32_t window_id,
                              uint32_t attach_index, uint64_t now_ns,
                              const std::string& open_error) {
  Window window;
  window.connection_id = connection_id;
  window.pid = pid;
  window.window_id = window_id;
  window.attach_index = attach_index;
  window.open_sent_ns = now_ns;
  if (request_.duration_ns > 0) window.close_due_ns = now_ns + request_.duration_ns;
  if (!open_error.empty()) {
    window.ended = true;
    window.end_note = "the open request could not be sent: " + open_error;
  }
  windows_.push_back(std::move(window));
}

AttachSession::Window* AttachSession::OpenWindowOf(uint64_t connection_id) {
  for (Window& window : windows_) {
    if (window.connection_id == connection_id && !window.ended) return &window;
  }
  return nullptr;
}

void AttachSession::WindowBegun(uint64_t connection_id, uint64_t begin_ns, uint64_t now_ns) {
  Window* window = OpenWindowOf(connection_id);
  if (window == nullptr) return;
  window->begin_seen = true;
  if (window->close_due_ns == 0) return;
  // The shim's CLOCK_MONOTONIC is ours (one host); a time outside [open, now] is not believed.
  const uint64_t begun = begin_ns >= window->open_sent_ns && begin_ns <= now_ns ? begin_ns : now_ns;
  window->close_due_ns = begun + request_.duration_ns;
}

void AttachSession::WindowEnded(uint64_t connection_id, std::unique_ptr<ProcessTrace> trace,
                                const std::string& why, uint64_t now_ns) {
  if (trace) trace->Finish(now_ns);
  Window* window = OpenWindowOf(connection_id);
  if (window == nullptr) return;
  window->ended = true;
  window->end_note = why;
  window->trace = std::move(trace);
}

void AttachSession::MarkCloseSent(Window& window, uint64_t now_ns, const std::string& why,
                                  std::vector<Close>* closes) {
  window.close_sent = true;
  window.close_sent_ns = now_ns;
  closes->push_back({window.connection_id, window.window_id, window.pid, why});
}

std::vector<AttachSession::Close> AttachSession::ClientGone(uint64_t now_ns) {
  client_connection_id_ = 0;
  std::vector<Close> closes;
  for (Window& window : windows_) {
    if (!window.ended && !window.close_sent) {
      MarkCloseSent(window, now_ns, "the attach client went away", &closes);
    }
  }
  return closes;
}

std::vector<AttachSession::Close> AttachSession::CloseAll(uint64_t now_ns, const std::string& why) {
  std::vector<Close> closes;
  for (Window& window : windows_) {
    if (!window.ended && !window.close_sent) MarkCloseSent(window, now_ns, why, &closes);
  }
  return closes;
}

AttachSession::Due AttachSession::Tick(uint64_t now_ns) {
  Due due;
  for (Window& window : windows_) {
    if (window.ended) continue;
    if (!window.close_sent) {
      if (window.close_due_ns != 0 && now_ns >= window.close_due_ns) {
        MarkCloseSent(window, now_ns, "its duration has passed", &due.closes);
      } else if (now_ns >= deadline_ns_) {
        MarkCloseSent(window, now_ns, "the attach timed out", &due.closes);
      }
      continue;
    }
    if (now_ns < window.close_sent_ns + timeouts_.close_grace_ns) continue;
    // No WindowEnd in time: the window ends without it, the rest of its stream is dropped.
    due.give_ups.push_back(
        {window.connection_id, "no WindowEnd came within " +
                                   std::to_string(timeouts_.close_grace_ns / 1000000) +
                                   " ms of the close request"});
  }
  return due;
}

std::optional<uint64_t> AttachSession::NextDueNs() const {
  std::optional<uint64_t> next;
  auto earlier = [&next](uint64_t ns) { next = next ? std::min(*next, ns) : ns; };
  for (const Window& window : windows_) {
    if (window.ended) continue;
    if (window.close_sent) {
      earlier(window.close_sent_ns + timeouts_.close_grace_ns);
    } else {
      earlier(deadline_ns_);
      if (window.close_due_ns != 0) earlier(window.close_due_ns);
    }
  }
  return next;
}

bool AttachSession::done() const {
  return std::all_of(windows_.begin(), windows_.end(),
                     [](const Window& window) { return window.ended; });
}

std::string AttachSession::EndNotes() const {
  std::string notes = skipped_note_;
  for (const Window& window : windows_) {
    if (window.end_note.empty() && window.trace) continue;
    notes += (notes.empty() ? "" : "; ") + std::string("pid ") + std::to_string(window.pid) + ": " +
             (window.end_note.empty() ? "no window data" : window.end_note);
  }
  return notes;
}

size_t AttachSession::windows_with_data() const {
  return static_cast<size_t>(
      std::count_if(windows_.begin(), windows_.end(),
                    [](const Window& window) { return window.trace != nullptr; }));
}

}  // namespace gpuattr::collector
