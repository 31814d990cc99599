// A minimal wire-protocol client for component tests: connects to the collector's socket and
// builds messages with schemas/wire/codec.h, as the shim does. Test-only; single-threaded.
#ifndef GPUATTR_TESTS_COMPONENT_WIRE_CLIENT_H_
#define GPUATTR_TESTS_COMPONENT_WIRE_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gpuattr::component {

using Datagram = std::vector<uint8_t>;

// A connected, blocking SOCK_SEQPACKET socket, or -1 (errno set).
int ConnectClient(const std::string& socket_path);

// Hello (with an exe String) and a successful CuptiState: the first message of a connection.
Datagram HelloMessage(uint32_t pid, uint64_t sequence = 0);
// A few ordinary records: a thread name, a range push and pop around a launch and its kernel.
Datagram RecordsMessage(uint64_t sequence);
// Goodbye: the orderly end of the stream.
Datagram GoodbyeMessage(uint64_t sequence);
// A valid message of exactly `total_bytes` (>= 48): one record of a type the protocol does not
// know yet, which a receiver skips by its size.
Datagram PaddedMessage(uint64_t sequence, uint32_t total_bytes);

// send() with MSG_NOSIGNAL; true when the whole datagram went.
bool SendDatagram(int fd, const Datagram& datagram);

// True when the peer closed the connection: recv() reports EOF or a reset within `timeout_ms`.
bool WaitForPeerClose(int fd, int timeout_ms);

}  // namespace gpuattr::component

#endif  // GPUATTR_TESTS_COMPONENT_WIRE_CLIENT_H_
