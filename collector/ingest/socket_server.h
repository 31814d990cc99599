// SocketServer: the collector's ingest. It listens on a Unix SOCK_SEQPACKET socket; one accepted
// connection is one traced process, and every datagram it sends goes to that connection's own
// ProcessTrace.
//
//   listening socket --accept--> SO_PEERCRED uid check --> Connection{fd, ProcessTrace}
//   datagram --recvmsg(kMaxMessageBytes + 1, MSG_TRUNC)--> size check --> ConsumeMessage
//   EOF --> Finish() --> finished traces, kept for the report
//
// Threading: it has no thread of its own. The owner's thread drives it: it waits on fd() (an
// epoll descriptor that turns readable when the listening socket or a connection has something
// to do), possibly together with descriptors of its own, then calls Service(). Every socket is
// non-blocking and each connection gets a bounded number of datagrams per Service() call, so one
// busy or hostile client can neither stall nor starve the others. `gpuattr run` drives it from
// its main thread beside a signalfd (collector/cli/run.cpp); tests drive it directly.
//
// Trust: none. A peer whose uid differs from ours is closed at accept. Each datagram is received
// into one buffer of kMaxMessageBytes + 1 bytes with MSG_TRUNC, so an oversized datagram is seen
// as such instead of being silently cut; ProcessTrace validates everything else. A connection that
// sends an oversized or malformed datagram is closed and counted, others go on; what it sent
// before is kept (its trace ends truncated) when it had said Hello.
//
// Memory: one receive buffer shared by all connections; per connection, its ProcessTrace (which
// bounds itself); at most ServerOptions::max_connections connections open at once.
#ifndef GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_
#define GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"

namespace gpuattr::collector {

struct ServerOptions {
  // Connections beyond this are accepted and closed at once (counted as rejected). Below the
  // usual RLIMIT_NOFILE soft limit of 1024, so accept() does not run out of descriptors first.
  uint32_t max_connections = 256;
  // Datagrams read from one connection (and connections accepted) per Service() call before the
  // next one's turn.
  uint32_t datagrams_per_turn = 64;
  // Set: each connection's ProcessTrace streams its analysis with these options (gpuattr run);
  // unset: it defers the analysis to the report.
  std::optional<AnalysisOptions> analysis;
};

struct IngestStats {
  uint64_t accepted_connections = 0;
  // Closed by us: another uid, over max_connections, or an oversized or malformed datagram.
  uint64_t rejected_connections = 0;
  // Datagrams that were oversized or that ProcessTrace rejected.
  uint64_t rejected_messages = 0;
  uint64_t messages = 0;  // datagrams accepted by a ProcessTrace
  uint64_t bytes = 0;     // their total size
  // Why connections were rejected, in words, for the terminal: the first kMaxRejectionNotes.
  std::vector<std::string> rejection_notes;
  static constexpr size_t kMaxRejectionNotes = 8;
};

class SocketServer {
 public:
  // Binds and listens at `socket_path`, which must not exist yet and must fit in sun_path. The
  // caller chooses a directory only this user can open (DESIGN §4); the uid check is the second
  // line of defence.
  static StatusOr<std::unique_ptr<SocketServer>> Listen(const std::string& socket_path,
                                                        ServerOptions options = {});

  // Closes every descriptor and unlinks the socket path. Open connections are dropped without
  // Finish(); call FinishAll() first to keep them.
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Readable when Service() has work to do. Stays owned by the server.
  int fd() const { return epoll_fd_; }

  // Waits up to `timeout_ms` (0: not at all, -1: forever) for events, then accepts new
  // connections and reads ready ones. A bad client is never an error here; only a failure of the
  // server's own descriptors is.
  Status Service(int timeout_ms);

  // Ends every open connection as if it had reached EOF: its trace is finished (truncated unless
  // it said Goodbye) and kept.
  void FinishAll();

  size_t open_connections() const { return connections_.size(); }
  const IngestStats& stats() const { return stats_; }
  // Traces of ended connections, in the order they ended: every one that said Hello, and those
  // that ended without a word (has_hello() false; the report counts them). A connection rejected
  // before its Hello leaves only its counts in stats().
  const std::vector<std::unique_ptr<ProcessTrace>>& finished_traces() const { return finished_; }

 private:
  struct Connection {  // keyed by its fd in connections_
    uint32_t peer_pid = 0;
    std::unique_ptr<ProcessTrace> trace;
  };
  enum class EndReason { kEof, kRejected };

  SocketServer(std::string socket_path, int listen_fd, int epoll_fd, ServerOptions options);

  void AcceptPending();
  void ServeConnection(int fd);
  void EndConnection(int fd, EndReason reason, const std::string& why);
  void Note(std::string note);

  std::string socket_path_;
  int listen_fd_;
  int epoll_fd_;
  ServerOptions options_;
  uint32_t own_uid_;
  std::vector<uint8_t> receive_buffer_;  // kMaxMessageBytes + 1: one more byte shows truncation
  std::unordered_map<int, Connection> connections_;
  std::vector<std::unique_ptr<ProcessTrace>> finished_;
  IngestStats stats_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_
