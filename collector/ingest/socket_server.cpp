#include "ingest/socket_server.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/os.h"
#include "wire/protocol.h"

namespace gpuattr::collector {
namespace {

constexpr int kMaxEventsPerWait = 64;

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

// The default handler: the connection is one traced process (gpuattr run).
class SocketServer::TraceHandler : public ConnectionHandler {
 public:
  TraceHandler(const AnalysisOptions& analysis,
               std::vector<std::unique_ptr<ProcessTrace>>* finished)
      : trace_(std::make_unique<ProcessTrace>(analysis)), finished_(finished) {}

  Status Consume(const uint8_t* data, uint32_t size) override {
    return trace_->ConsumeMessage(data, size);
  }

  void End(EndReason reason) override {
    // A rejected connection that never said Hello is no process we can name: it leaves only its
    // counts. One that ended without a word is kept for the report to count.
    if (trace_->has_hello() || reason == EndReason::kEof) {
      trace_->Finish(NowNs(CLOCK_MONOTONIC));
      finished_->push_back(std::move(trace_));
    }
  }

 private:
  std::unique_ptr<ProcessTrace> trace_;
  std::vector<std::unique_ptr<ProcessTrace>>* finished_;
};

StatusOr<std::unique_ptr<SocketServer>> SocketServer::Listen(const std::string& socket_path,
                                                             ServerOptions options) {
  GPUATTR_ASSIGN_OR_RETURN(const sockaddr_un address, UnixSocketAddress(socket_path));
  const int listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0)
    return UnavailableError("socket(AF_UNIX, SOCK_SEQPACKET): " + ErrnoText(errno));
  if (bind(listen_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    close(listen_fd);
    return UnavailableError("bind " + socket_path + ": " + ErrnoText(error));
  }
  if (listen(listen_fd, SOMAXCONN) != 0) {
    const int error = errno;
    close(listen_fd);
    unlink(socket_path.c_str());
    return UnavailableError("listen " + socket_path + ": " + ErrnoText(error));
  }
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listen_fd;
  if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &event) != 0) {
    const int error = errno;
    if (epoll_fd >= 0) close(epoll_fd);
    close(listen_fd);
    unlink(socket_path.c_str());
    return InternalError("epoll setup for " + socket_path + ": " + ErrnoText(error));
  }
  return std::unique_ptr<SocketServer>(new SocketServer(socket_path, listen_fd, epoll_fd, options));
}

SocketServer::SocketServer(std::string socket_path, int listen_fd, int epoll_fd,
                           ServerOptions options)
    : socket_path_(std::move(socket_path)),
      listen_fd_(listen_fd),
      epoll_fd_(epoll_fd),
      options_(options),
      own_uid_(geteuid()),
      receive_buffer_(wire::kMaxMessageBytes + 1) {}

SocketServer::~SocketServer() {
  // Handlers go with connections_, without End(): FinishAll() is the way to keep them.
  for (auto& [fd, connection] : connections_) close(fd);
  close(epoll_fd_);
  close(listen_fd_);
  unlink(socket_path_.c_str());
}

Status SocketServer::Service(int timeout_ms) {
  epoll_event events[kMaxEventsPerWait];
  const int ready = epoll_wait(epoll_fd_, events, kMaxEventsPerWait, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return Status::Ok();
    return InternalError("epoll_wait on the collector socket: " + ErrnoText(errno));
  }
  for (int i = 0; i < ready; ++i) {
    if (events[i].data.fd == listen_fd_) {
      AcceptPending();
    } else {
      ServeConnection(events[i].data.fd);
    }
  }
  return Status::Ok();
}

void SocketServer::AcceptPending() {
  // Bounded like reads, so a peer that connects in a loop cannot hold the thread here; the
  // listener is level-triggered and the rest waits for the next Service().
  for (uint32_t turn = 0; turn < options_.datagrams_per_turn; ++turn) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EAGAIN: nothing left. EMFILE/ENFILE and the like: the listener stays readable and the
      // next Service() tries again; max_connections keeps us clear of them in practice.
      if (errno != EAGAIN && errno != EWOULDBLOCK) Note("accept failed: " + ErrnoText(errno));
      return;
    }
    ucred credentials{};
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
      Note("connection refused: SO_PEERCRED failed: " + ErrnoText(errno));
      close(fd);
      ++stats_.rejected_connections;
      continue;
    }
    if (credentials.uid != own_uid_) {
      Note("connection from pid " + std::to_string(credentials.pid) + " refused: uid " +
           std::to_string(credentials.uid) + " is not ours (" + std::to_string(own_uid_) + ")");
      close(fd);
      ++stats_.rejected_connections;
      continue;
    }
    if (connections_.size() >= options_.max_connections) {
      Note("connection from pid " + std::to_string(credentials.pid) + " refused: already " +
           std::to_string(connections_.size()) + " connections open");
      close(fd);
      ++stats_.rejected_connections;
      continue;
    }
    epoll_event event{};
    event.events = EPOLLIN;  // EPOLLHUP and EPOLLERR are always reported
    event.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      Note("connection refused: epoll_ctl: " + ErrnoText(errno));
      close(fd);
      ++stats_.rejected_connections;
      continue;
    }
    Connection connection;
    connection.peer.connection_id = next_connection_id_++;
    connection.peer.pid = static_cast<uint32_t>(credentials.pid);
    connection.peer.uid = static_cast<uint32_t>(credentials.uid);
    connection.handler = options_.handler_factory
                             ? options_.handler_factory(connection.peer)
                             : std::make_unique<TraceHandler>(options_.analysis, &finished_);
    fd_by_connection_id_.emplace(connection.peer.connection_id, fd);
    connections_.emplace(fd, std::move(connection));
    ++stats_.accepted_connections;
  }
}

void SocketServer::ServeConnection(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;  // ended earlier in this batch of events
  Connection& connection = it->second;
  for (uint32_t turn = 0; turn < options_.datagrams_per_turn; ++turn) {
    iovec io{receive_buffer_.data(), receive_buffer_.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    // MSG_TRUNC: the return value is the datagram's real length even when it did not fit.
    const ssize_t received = recvmsg(fd, &message, MSG_DONTWAIT | MSG_TRUNC);
    if (received < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // ECONNRESET and the like: the peer is gone; what it sent before stands.
      EndConnection(fd, EndReason::kEof, "");
      return;
    }
    // A SOCK_SEQPACKET read of 0 is the peer's orderly shutdown (a zero-length datagram, which
    // our shim never sends, reads the same and ends the connection just as well).
    if (received == 0) {
      EndConnection(fd, EndReason::kEof, "");
      return;
    }
    const auto size = static_cast<size_t>(received);
    if (size > wire::kMaxMessageBytes || (message.msg_flags & MSG_TRUNC) != 0) {
      ++stats_.rejected_messages;
      EndConnection(fd, EndReason::kRejected,
                    "a datagram of " + std::to_string(size) + " bytes exceeds the limit of " +
                        std::to_string(wire::kMaxMessageBytes));
      return;
    }
    Status status =
        connection.handler->Consume(receive_buffer_.data(), static_cast<uint32_t>(size));
    if (!status.ok()) {
      ++stats_.rejected_messages;
      EndConnection(fd, EndReason::kRejected, status.message());
      return;
    }
    ++stats_.messages;
    stats_.bytes += size;
  }
}

void SocketServer::EndConnection(int fd, EndReason reason, const std::string& why) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection connection = std::move(it->second);
  connections_.erase(it);
  fd_by_connection_id_.erase(connection.peer.connection_id);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  if (reason == EndReason::kRejected) {
    ++stats_.rejected_connections;
    Note("connection from pid " + std::to_string(connection.peer.pid) + " closed: " + why);
  }
  connection.handler->End(reason);
}

Status SocketServer::Send(uint64_t connection_id, const uint8_t* data, uint32_t size) {
  auto it = fd_by_connection_id_.find(connection_id);
  if (it == fd_by_connection_id_.end()) {
    return NotFoundError("connection " + std::to_string(connection_id) + " has ended");
  }
  for (;;) {
    const ssize_t sent = send(it->second, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(size)) return Status::Ok();
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return UnavailableError("the peer's socket is full");
    }
    return UnavailableError("send: " + ErrnoText(sent < 0 ? errno : EMSGSIZE));
  }
}

void SocketServer::FinishAll() {
  std::vector<int> open;
  open.reserve(connections_.size());
  for (const auto& [fd, connection] : connections_) open.push_back(fd);
  std::sort(open.begin(), open.end());  // accept order, near enough: deterministic either way
  for (int fd : open) {
    // What is already queued was sent before the end; take one turn of it (a live sender could
    // keep the socket full forever, so no more than that).
    ServeConnection(fd);
    EndConnection(fd, EndReason::kEof, "");
  }
}

void SocketServer::Note(std::string note) {
  if (stats_.rejection_notes.size() < IngestStats::kMaxRejectionNotes) {
    stats_.rejection_notes.push_back(std::move(note));
  }
}

}  // namespace gpuattr::collector
