// Late attach (docs/attach.md §Injection): the shim loaded into a running process by `gpuattr
// attach --pid` (collector/ptrace/), not at its start. The injector calls the exported entry
// point GpuattrAttachLate(socket) (entry.cpp) on a thread it stopped; StartLateAttach must
// return at once: it only starts the armed session (the flush thread connects and registers
// with the daemon as an armed process), and windows then open as for any armed process.
//
// What differs from a shim loaded at start, per window:
//   - WindowBegin carries kWindowBeginFlagLateAttach (and kWindowBeginFlagTorchLoaded when torch's
//     Python bindings are loaded): the collector then refuses what a late attach cannot know (NVTX
//     ranges, launches in flight, the annotator) and names graphs built before it;
//   - CUPTI gives no device records after a late attach (cupti-notes §5), so the devices are named
//     through the driver API (cuDeviceGetCount, cuDeviceGetName) from libcuda.so.1 already loaded
//     in the process, else from whatever object of the process defines them.
#ifndef GPUATTR_INJECT_RUNTIME_LATE_ATTACH_H_
#define GPUATTR_INJECT_RUNTIME_LATE_ATTACH_H_

#include <cstdint>

namespace gpuattr::inject {

// Return values of StartLateAttach (and of GpuattrAttachLate).
enum LateAttachResult : int {
  kLateAttachStarted = 0,     // an armed session started: the process registers with the daemon
  kLateAttachHadSession = 1,  // a session was already running (the shim was there before)
  kLateAttachFailed = -1,     // the socket path is unusable, or the flush thread did not start
};

// Starts an armed session towards the daemon at `socket_path`. Returns at once. Runs on: the
// thread the injector stopped (any thread of the process).
int StartLateAttach(const char* socket_path) noexcept;

// True once StartLateAttach started this process's session. Runs on: any thread.
bool AttachedLate() noexcept;

// The WindowBegin record flags of this process's windows (0 unless attached late). Runs on: the
// flush thread.
uint16_t WindowBeginFlags() noexcept;

// Device records named through the driver API, into the calling thread's ring; nothing when no
// driver API is reachable. Runs on: the flush thread, when a late window opens.
void EmitDriverDeviceNames() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_LATE_ATTACH_H_
