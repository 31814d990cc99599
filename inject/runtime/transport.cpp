#include "runtime/transport.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/clock.h"
#include "runtime/shim_log.h"

namespace gpuattr::inject {
namespace {

// How often a wait with no limit of its own looks at the deadline another thread may set.
constexpr int kDeadlineCheckMs = 10;

// Waits until `fd` is writable, at most `wait_ms` (kWaitWhileConnected: no limit of its own) and
// never past a non-zero `*deadline_ns`. True when writable.
bool WaitWritable(int fd, int wait_ms, const std::atomic<uint64_t>* deadline_ns) noexcept {
  if (wait_ms == 0) return false;
  const uint64_t own_deadline = wait_ms > 0 ? MonotonicNsAfterMs(wait_ms) : UINT64_MAX;
  for (;;) {
    uint64_t deadline = own_deadline;
    const uint64_t cut = deadline_ns != nullptr ? deadline_ns->load(std::memory_order_relaxed) : 0;
    if (cut != 0 && cut < deadline) deadline = cut;
    const uint64_t now = MonotonicNs();
    if (now >= deadline) return false;
    const uint64_t left_ms = (deadline - now + 999999) / 1000000;
    pollfd pfd{fd, POLLOUT, 0};
    const int n = poll(&pfd, 1, static_cast<int>(std::min<uint64_t>(left_ms, kDeadlineCheckMs)));
    if (n > 0) return (pfd.revents & POLLOUT) != 0 && (pfd.revents & (POLLERR | POLLHUP)) == 0;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

bool Transport::Connect(const char* path, int wait_ms) noexcept {
  Close();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path == nullptr || std::strlen(path) >= sizeof(address.sun_path)) return false;
  std::strcpy(address.sun_path, path);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  if (rc != 0 && (errno == EAGAIN || errno == EINPROGRESS) && WaitWritable(fd, wait_ms, nullptr)) {
    int error = 0;
    socklen_t length = sizeof(error);
    rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0 ? 0 : -1;
  }
  if (rc != 0) {
    ShimLog("cannot connect to the collector at %s: %s", path, strerror(errno));
    close(fd);
    return false;
  }
  fd_ = fd;
  broken_ = false;
  return true;
}

void Transport::Adopt(int fd) noexcept {
  Close();
  fd_ = fd;
  broken_ = fd < 0;
}

void Transport::Close() noexcept {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  broken_ = true;
}

bool Transport::Send(const uint8_t* data, uint32_t size, uint32_t records, int wait_ms,
                     const std::atomic<uint64_t>* deadline_ns) noexcept {
  if (broken_) {
    Drop(records);
    return false;
  }
  for (;;) {
    const ssize_t n = send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(size)) {
      ++sent_messages_;
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      if (WaitWritable(fd_, wait_ms, deadline_ns)) {
        // A bounded wait is one wait per message: a second EAGAIN drops it. An unbounded one
        // waits again, after a pause, in case the socket is writable but too full for this one.
        if (wait_ms > 0) wait_ms = 0;
        if (wait_ms == kWaitWhileConnected) usleep(1000);
        continue;
      }
      Drop(records);
      return false;
    }
    if (n < 0 && errno == EMSGSIZE) {  // larger than the peer's buffer: lose this one only
      Drop(records);
      return false;
    }
    // EPIPE, ECONNRESET, a short send...: the connection is no longer usable.
    ShimLog("collector connection lost: %s", n < 0 ? strerror(errno) : "short send");
    broken_ = true;
    Drop(records);
    return false;
  }
}

int Transport::Receive(uint8_t* buffer, uint32_t capacity) noexcept {
  if (broken_) return -1;
  for (;;) {
    const ssize_t n = recv(fd_, buffer, capacity, MSG_DONTWAIT | MSG_TRUNC);
    if (n > 0) return n <= static_cast<ssize_t>(capacity) ? static_cast<int>(n) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    broken_ = true;  // 0: the collector closed the connection; anything else: it is unusable
    return -1;
  }
}

void Outbox::Flush() noexcept {
  if (writer_.empty()) return;
  const uint32_t records = writer_.record_count();
  const uint32_t size = writer_.Finish(sequence_++);
  transport_->Send(writer_.data(), size, records, wait_ms_, &deadline_ns_);
  writer_.Reset();
}

}  // namespace gpuattr::inject
