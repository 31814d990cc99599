#include "wire_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "wire/codec.h"

namespace gpuattr::component {
namespace {

constexpr uint32_t kExeString = 1;
constexpr uint32_t kThreadString = 2;
constexpr uint32_t kRangeString = 3;
constexpr uint32_t kKernelString = 4;

template <typename Fill>
Datagram Build(uint64_t sequence, Fill fill) {
  Datagram buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  fill(writer);
  buffer.resize(writer.Finish(sequence));
  return buffer;
}

}  // namespace

int ConnectClient(const std::string& socket_path) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

Datagram HelloMessage(uint32_t pid, uint64_t sequence) {
  return Build(sequence, [pid](wire::MessageWriter& writer) {
    wire::Hello hello = wire::MakeHello(wire::HelloMode::kTraced, pid);
    hello.shim_version = 1u << 8;
    hello.ppid = 1;
    hello.exe_string = kExeString;
    writer.Append(hello);
    writer.AppendString(kExeString, "/usr/bin/component-test-client");
    // As the shim sends once InitializeInjection subscribed: device time is being measured.
    writer.Append(wire::CuptiState{0, 130000, 0, 0});
  });
}

Datagram RecordsMessage(uint64_t sequence) {
  return Build(sequence, [](wire::MessageWriter& writer) {
    constexpr uint32_t kTid = 77;
    constexpr uint32_t kNode = 1;
    writer.AppendString(kThreadString, "main");
    writer.AppendString(kRangeString, "step");
    writer.AppendString(kKernelString, "_Z4gemmPfS_");
    writer.Append(wire::ThreadName{kTid, kThreadString});
    writer.Append(wire::PathNode{kNode, 0, kRangeString, 0});
    writer.AppendRange(wire::RecordType::kRangePush, wire::RangeEvent{1000, kTid, kNode});
    writer.Append(wire::ApiEnter{1100, 5, kTid, kNode, 211,
                                 static_cast<uint8_t>(wire::ApiDomain::kRuntime),
                                 static_cast<uint8_t>(wire::ApiKind::kKernel)});
    writer.Append(wire::ApiExit{1200, 5, kTid});
    wire::Kernel kernel{};
    kernel.start_ns = 1300;
    kernel.end_ns = 1800;
    kernel.correlation_id = 5;
    kernel.name_string = kKernelString;
    kernel.stream = 7;
    kernel.grid[0] = kernel.grid[1] = kernel.grid[2] = 1;
    kernel.block[0] = kernel.block[1] = kernel.block[2] = 1;
    writer.Append(kernel);
    writer.AppendRange(wire::RecordType::kRangePop, wire::RangeEvent{2000, kTid, kNode});
  });
}

Datagram GoodbyeMessage(uint64_t sequence) {
  return Build(sequence, [](wire::MessageWriter& writer) {
    writer.Append(wire::Goodbye{3000, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0});
  });
}

Datagram PaddedMessage(uint64_t sequence, uint32_t total_bytes) {
  Datagram buffer(total_bytes);
  wire::MessageWriter writer(buffer.data(), total_bytes);
  Datagram record(total_bytes - sizeof(wire::MessageHeader), 0);
  const wire::RecordHeader header{0x7fff, 0, static_cast<uint32_t>(record.size())};
  std::memcpy(record.data(), &header, sizeof(header));
  writer.AppendEncoded(record.data(), static_cast<uint32_t>(record.size()));
  buffer.resize(writer.Finish(sequence));
  return buffer;
}

bool SendDatagram(int fd, const Datagram& datagram) {
  const ssize_t sent = send(fd, datagram.data(), datagram.size(), MSG_NOSIGNAL);
  return sent == static_cast<ssize_t>(datagram.size());
}

bool WaitForPeerClose(int fd, int timeout_ms) {
  pollfd poll_fd{fd, POLLIN, 0};
  if (poll(&poll_fd, 1, timeout_ms) <= 0) return false;
  char byte;
  return recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
}

}  // namespace gpuattr::component
