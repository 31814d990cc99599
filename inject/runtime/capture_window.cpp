#include "runtime/capture_window.h"

#include <cstring>

#include "runtime/clock.h"
#include "runtime/shim_state.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

bool IsBuiltInStepName(std::string_view name) noexcept {
  for (std::string_view known : {"step", "train_step", "trainstep", "iteration", "iter"}) {
    if (EqualsIgnoringCase(name, known)) return true;
  }
  constexpr std::string_view kProfilerStep = "ProfilerStep#";
  if (name.size() <= kProfilerStep.size() ||
      name.substr(0, kProfilerStep.size()) != kProfilerStep) {
    return false;
  }
  for (char c : name.substr(kProfilerStep.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void CaptureWindow::WatchSteps(uint32_t steps, std::string_view step_name) noexcept {
  steps_wanted_ = steps;
  step_name_length_ =
      static_cast<uint32_t>(step_name.size() < kMaxStepName ? step_name.size() : kMaxStepName);
  // An empty view may have a null data(), which memcpy must never see, even for 0 bytes.
  if (step_name_length_ > 0) std::memcpy(step_name_, step_name.data(), step_name_length_);
  steps_seen_.store(0, std::memory_order_relaxed);
  phase_.store(kWaitingForStep, std::memory_order_release);
}

void CaptureWindow::StartRecording(uint64_t now_ns) noexcept {
  begin_ns_.store(now_ns, std::memory_order_relaxed);
  end_ns_.store(0, std::memory_order_relaxed);
  // The epoch is published after the begin time, so a thread that sees the new epoch also sees
  // the time its open frames are stamped with.
  epoch_.fetch_add(1, std::memory_order_release);
  Shim().hot_flags.fetch_and(~kHotArmed, std::memory_order_release);
}

uint64_t CaptureWindow::BeginNow() noexcept {
  steps_wanted_ = 0;
  steps_seen_.store(0, std::memory_order_relaxed);
  const uint64_t now = RecordClockNs();
  StartRecording(now);
  phase_.store(kRecording, std::memory_order_release);
  return now;
}

uint64_t CaptureWindow::StopRecording() noexcept {
  Shim().hot_flags.fetch_or(kHotArmed, std::memory_order_acq_rel);
  uint64_t end = end_ns_.load(std::memory_order_acquire);
  if (end == 0) {
    end = RecordClockNs();
    uint64_t expected = 0;
    if (!end_ns_.compare_exchange_strong(expected, end, std::memory_order_acq_rel)) end = expected;
  }
  return end;
}

void CaptureWindow::Reset() noexcept {
  phase_.store(kIdle, std::memory_order_release);
  steps_wanted_ = 0;
}

void CaptureWindow::RequestDetach(uint64_t now_ns) noexcept {
  detach_requested_ns_.store(now_ns, std::memory_order_relaxed);
  detach_done_ns_.store(0, std::memory_order_relaxed);
  detach_.store(kDetachRequested, std::memory_order_release);
}

bool CaptureWindow::CancelDetachRequest() noexcept {
  uint32_t expected = kDetachRequested;
  return detach_.compare_exchange_strong(expected, kNoDetach, std::memory_order_acq_rel);
}

bool CaptureWindow::ClaimDetach() noexcept {
  uint32_t expected = kDetachRequested;
  return detach_.compare_exchange_strong(expected, kDetaching, std::memory_order_acq_rel);
}

void CaptureWindow::DetachDone(uint64_t now_ns) noexcept {
  const uint64_t requested = detach_requested_ns_.load(std::memory_order_relaxed);
  detach_done_ns_.store(now_ns > requested ? now_ns - requested : 0, std::memory_order_relaxed);
  detach_.store(kDetached, std::memory_order_release);
}

bool CaptureWindow::NameIsStep(std::string_view name) const noexcept {
  if (step_name_length_ == 0) return IsBuiltInStepName(name);
  return name == std::string_view(step_name_, step_name_length_);
}

bool CaptureWindow::OnTopLevelPush(std::string_view name, uint64_t now_ns) noexcept {
  if (!NameIsStep(name)) return false;
  uint32_t expected = kWaitingForStep;
  if (phase_.compare_exchange_strong(expected, kRecording, std::memory_order_acq_rel)) {
    StartRecording(now_ns);
    return true;
  }
  return expected == kRecording;
}

void CaptureWindow::OnStepPop(uint64_t now_ns) noexcept {
  if (phase_.load(std::memory_order_acquire) != kRecording || steps_wanted_ == 0) return;
  const uint32_t seen = steps_seen_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (seen != steps_wanted_) return;
  uint64_t expected = 0;
  end_ns_.compare_exchange_strong(expected, now_ns, std::memory_order_acq_rel);
  Shim().hot_flags.fetch_or(kHotArmed, std::memory_order_acq_rel);
  phase_.store(kStepsDone, std::memory_order_release);
}

void CaptureWindow::SyncThreadSlow(ThreadState* t) noexcept {
  const uint32_t epoch = epoch_.load(std::memory_order_acquire);
  const uint64_t begin = begin_ns_.load(std::memory_order_relaxed);
  PathTable& paths = Shim().paths;
  for (uint32_t i = 0; i < t->depth; ++i) {
    RangeFrame& frame = t->frames[i];
    // Frames pushed while armed have no path yet: intern them now, as the push would have.
    const uint32_t parent = i == 0 ? 0 : t->frames[i - 1].node;
    const uint32_t node = paths.Intern(PathKey{parent, frame.name, frame.domain});
    frame.node = node != 0 ? node : parent;
    frame.pushed_node = node;  // its RangePop reports the path this window was told
    frame.sent =
        node != 0 && !IsContextDomain(frame.domain) &&
                t->ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{begin, t->tid, node},
                             wire::kRangeFlagOpenBeforeWindow)
            ? 1
            : 0;
  }
  t->current_node = t->depth == 0 ? 0 : t->frames[t->depth - 1].node;
  t->window_epoch = epoch;
}

}  // namespace gpuattr::inject
