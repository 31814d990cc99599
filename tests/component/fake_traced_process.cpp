// A stand-in for a traced process in component tests of `gpuattr run`: it speaks the wire
// protocol to $GPUATTR_SOCKET the way the shim would, without CUDA or the shim.
//
//   fake_traced_process complete         Hello, records, Goodbye; exit 0
//   fake_traced_process late-child MS    fork; the parent exits 0 at once, the child connects
//                                        MS milliseconds later and sends a complete stream
//   fake_traced_process linger           Hello, then holds the connection open until killed
//   fake_traced_process exit CODE        a complete stream, then exit CODE
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "wire_client.h"

namespace {

using gpuattr::component::ConnectClient;
using gpuattr::component::GoodbyeMessage;
using gpuattr::component::HelloMessage;
using gpuattr::component::RecordsMessage;
using gpuattr::component::SendDatagram;

int Connect() {
  const char* socket_path = std::getenv("GPUATTR_SOCKET");
  if (socket_path == nullptr) {
    std::fprintf(stderr, "fake_traced_process: GPUATTR_SOCKET is not set\n");
    std::exit(90);
  }
  const int fd = ConnectClient(socket_path);
  if (fd < 0) {
    std::fprintf(stderr, "fake_traced_process: cannot connect to %s\n", socket_path);
    std::exit(91);
  }
  return fd;
}

void SendCompleteStream() {
  const int fd = Connect();
  const bool sent = SendDatagram(fd, HelloMessage(static_cast<uint32_t>(getpid()), 0)) &&
                    SendDatagram(fd, RecordsMessage(1)) && SendDatagram(fd, GoodbyeMessage(2));
  close(fd);
  if (!sent) std::exit(92);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "complete") {
    SendCompleteStream();
    return 0;
  }
  if (mode == "exit" && argc > 2) {
    SendCompleteStream();
    return std::atoi(argv[2]);
  }
  if (mode == "late-child" && argc > 2) {
    const pid_t child = fork();
    if (child < 0) return 93;
    if (child > 0) return 0;
    usleep(static_cast<useconds_t>(std::atoi(argv[2])) * 1000);
    SendCompleteStream();
    return 0;
  }
  if (mode == "linger") {
    const int fd = Connect();
    if (!SendDatagram(fd, HelloMessage(static_cast<uint32_t>(getpid()), 0))) return 92;
    // Descendant-like: the parent that started us is gone; we stay until killed.
    for (;;) pause();
  }
  std::fprintf(stderr, "usage: fake_traced_process complete|exit CODE|late-child MS|linger\n");
  return 2;
}
