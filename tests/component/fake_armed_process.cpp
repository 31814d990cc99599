// A stand-in for an armed process in component tests of `gpuattr daemon` and `gpuattr attach`:
// it speaks the attach side of the wire protocol (docs/attach.md) to $GPUATTR_SOCKET the way
// the shim would, without CUDA or the shim.
//
//   fake_armed_process [RANK]   registers (Hello{mode=armed}, RANK or -1), then serves windows
//                               until the daemon closes the connection (exit 0)
//
// Each Control{kOpenWindow} is answered with one window stream: Hello{mode=window}, CuptiState,
// WindowBegin, then under a range "step" three launches and their kernels of 500, 700 and 300
// ns (kernel_ns 1500); a kNow window ends at Control{kCloseWindow}, a kSteps one at once (reason
// kStepsDone, steps_seen = the steps asked). A window's stream restarts ids and sequence numbers.
// With GPUATTR_FAKE_WINDOW_MARKER=PATH it creates PATH.<window id> once a window's records are
// sent, so that a test knows they are queued for the daemon.
// Exit status: 0 when the daemon hung up; 9x on a protocol surprise (see main).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "wire/codec.h"
#include "wire_client.h"

namespace {

using gpuattr::component::ConnectClient;
using gpuattr::component::Datagram;
using gpuattr::component::SendDatagram;
namespace wire = gpuattr::wire;

constexpr uint32_t kExeString = 1;
constexpr uint32_t kThreadString = 2;
constexpr uint32_t kRangeString = 3;
constexpr uint32_t kKernelString = 4;
constexpr uint32_t kTid = 4242;
constexpr uint32_t kNode = 1;

uint64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

template <typename Fill>
Datagram Build(uint64_t sequence, Fill fill) {
  Datagram buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  fill(writer);
  buffer.resize(writer.Finish(sequence));
  return buffer;
}

Datagram HelloOf(wire::HelloMode mode, int32_t rank, uint64_t sequence) {
  return Build(sequence, [&](wire::MessageWriter& writer) {
    wire::Hello hello = wire::MakeHello(mode, static_cast<uint32_t>(getpid()));
    hello.shim_version = 1u << 8;
    hello.ppid = static_cast<uint32_t>(getppid());
    hello.rank = rank;
    hello.exe_string = kExeString;
    writer.Append(hello);
    writer.AppendString(kExeString, "/usr/bin/fake-armed-process");
    if (mode == wire::HelloMode::kWindow) writer.Append(wire::CuptiState{0, 130000, 0, 0});
    // As the shim does, the registration also defines what it has interned so far.
    if (mode == wire::HelloMode::kArmed) {
      writer.AppendString(kThreadString, "main");
      writer.Append(wire::ThreadName{kTid, kThreadString});
    }
  });
}

// WindowBegin and the window's records: three launches and kernels under "step".
Datagram WindowBody(uint32_t window_id, uint64_t sequence) {
  return Build(sequence, [&](wire::MessageWriter& writer) {
    const uint64_t base = MonotonicNs();
    writer.Append(wire::WindowBegin{base, window_id, 1, 1000});
    writer.AppendString(kThreadString, "main");
    writer.AppendString(kRangeString, "step");
    writer.AppendString(kKernelString, "_Z4gemmPfS_");
    writer.Append(wire::ThreadName{kTid, kThreadString});
    writer.Append(wire::PathNode{kNode, 0, kRangeString, 0});
    writer.AppendRange(wire::RecordType::kRangePush, wire::RangeEvent{base + 100, kTid, kNode});
    const uint64_t durations[3] = {500, 700, 300};
    for (uint32_t i = 0; i < 3; ++i) {
      const uint64_t at = base + 1000 * (i + 1);
      const uint32_t correlation = 10 + i;
      writer.Append(wire::ApiEnter{at, correlation, kTid, kNode, 211,
                                   static_cast<uint8_t>(wire::ApiDomain::kRuntime),
                                   static_cast<uint8_t>(wire::ApiKind::kKernel)});
      writer.Append(wire::ApiExit{at + 50, correlation, kTid});
      wire::Kernel kernel{};
      kernel.start_ns = at + 100;
      kernel.end_ns = at + 100 + durations[i];
      kernel.correlation_id = correlation;
      kernel.name_string = kKernelString;
      kernel.stream = 7;
      kernel.grid[0] = kernel.grid[1] = kernel.grid[2] = 1;
      kernel.block[0] = kernel.block[1] = kernel.block[2] = 1;
      writer.Append(kernel);
    }
    writer.AppendRange(wire::RecordType::kRangePop, wire::RangeEvent{base + 4000, kTid, kNode});
  });
}

Datagram WindowClosing(uint32_t window_id, wire::WindowEndReason reason, uint32_t steps_seen,
                       uint64_t sequence) {
  return Build(sequence, [&](wire::MessageWriter& writer) {
    writer.Append(wire::Diagnostics{});
    wire::WindowEnd end{};
    end.timestamp_ns = MonotonicNs();
    end.window_id = window_id;
    end.reason = static_cast<uint32_t>(reason);
    end.detach = static_cast<uint32_t>(wire::DetachOutcome::kFinalized);
    end.steps_seen = steps_seen;
    end.detach_ns = 5000;
    writer.Append(end);
  });
}

// The next Control from the daemon; false when it hung up.
bool ReceiveControl(int fd, wire::Control* control) {
  std::vector<uint8_t> buffer(wire::kMaxMessageBytes + 1);
  for (;;) {
    const ssize_t received = recv(fd, buffer.data(), buffer.size(), 0);
    if (received <= 0) return false;
    wire::MessageReader reader;
    if (reader.Open(buffer.data(), static_cast<uint32_t>(received)) != wire::DecodeError::kNone) {
      std::exit(94);
    }
    wire::RecordView record;
    while (reader.Next(&record)) {
      if (record.type == wire::RecordType::kControl) {
        *control = record.As<wire::Control>();
        return true;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* socket_path = std::getenv("GPUATTR_SOCKET");
  if (socket_path == nullptr) return 90;
  const int32_t rank = argc > 1 ? std::atoi(argv[1]) : -1;
  const int fd = ConnectClient(socket_path);
  if (fd < 0) return 91;
  if (!SendDatagram(fd, HelloOf(wire::HelloMode::kArmed, rank, 0))) return 92;
  wire::Control control{};
  while (ReceiveControl(fd, &control)) {
    if (control.command != static_cast<uint32_t>(wire::ControlCommand::kOpenWindow)) return 93;
    const uint32_t window_id = control.window_id;
    if (!SendDatagram(fd, HelloOf(wire::HelloMode::kWindow, rank, 0)) ||
        !SendDatagram(fd, WindowBody(window_id, 1))) {
      return 92;
    }
    if (const char* marker = std::getenv("GPUATTR_FAKE_WINDOW_MARKER"); marker != nullptr) {
      const std::string path = std::string(marker) + "." + std::to_string(window_id);
      const int marker_fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (marker_fd >= 0) close(marker_fd);
    }
    if (control.trigger == static_cast<uint32_t>(wire::WindowTrigger::kSteps)) {
      if (!SendDatagram(
              fd, WindowClosing(window_id, wire::WindowEndReason::kStepsDone, control.steps, 2))) {
        return 92;
      }
      continue;
    }
    if (!ReceiveControl(fd, &control)) return 0;
    if (control.command != static_cast<uint32_t>(wire::ControlCommand::kCloseWindow) ||
        control.window_id != window_id) {
      return 95;
    }
    if (!SendDatagram(fd, WindowClosing(window_id, wire::WindowEndReason::kClosed, 0, 2))) {
      return 92;
    }
  }
  return 0;
}
