// SocketServer: the collector's ingest. It listens on a Unix SOCK_SEQPACKET socket and hands every
// datagram of an accepted connection to that connection's own ConnectionHandler.
//
//   listening socket --accept--> SO_PEERCRED uid check --> Connection{fd, id, handler}
//   datagram --recvmsg(kMaxMessageBytes + 1, MSG_TRUNC)--> size check --> handler->Consume
//   EOF --> handler->End(kEof)          a non-OK Consume --> close, count, handler->End(kRejected)
//
// Handlers: ServerOptions::handler_factory makes one per accepted connection (`gpuattr daemon`
// tells its connection roles apart there). Without a factory every connection is one traced
// process: its datagrams go to a ProcessTrace, kept in finished_traces() once it ended (`gpuattr
// run`). A handler may answer its peer, or any other open connection, with Send(): a
// non-blocking send of one datagram; a full socket is a failed send, never a wait.
//
// Threading: it has no thread of its own. The owner's thread drives it: it waits on fd() (an
// epoll descriptor that turns readable when the listening socket or a connection has something
// to do), possibly together with descriptors of its own, then calls Service(). Every socket is
// non-blocking and each connection gets a bounded number of datagrams per Service() call, so one
// busy or hostile client can neither stall nor starve the others. `gpuattr run` drives it from
// its main thread beside a signalfd (collector/cli/run.cpp); tests drive it directly. Handlers
// run on that thread, inside Service() and FinishAll(); they may call Send() but must not end
// connections themselves (they return an error from Consume to have theirs closed).
//
// Trust: none. A peer whose uid differs from ours is closed at accept. Each datagram is received
// into one buffer of kMaxMessageBytes + 1 bytes with MSG_TRUNC, so an oversized datagram is seen
// as such instead of being silently cut; the handler validates everything else. A connection that
// sends an oversized or malformed datagram is closed and counted, others go on; what it sent
// before is kept (its trace ends truncated) when it had said Hello.
//
// Memory: one receive buffer shared by all connections; per connection, its handler (a
// ProcessTrace bounds itself); at most ServerOptions::max_connections connections open at once.
#ifndef GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_
#define GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"

namespace gpuattr::collector {

// Who is at the other end of an accepted connection (SO_PEERCRED at connect time).
struct PeerInfo {
  uint64_t connection_id = 0;  // unique for the server's life, never reused; Send() takes it
  uint32_t pid = 0;
  uint32_t uid = 0;
};

// Consumes one connection's datagrams. Runs on the thread that drives the server.
class ConnectionHandler {
 public:
  enum class EndReason { kEof, kRejected };
  virtual ~ConnectionHandler() = default;
  // One datagram of at most kMaxMessageBytes, not yet validated. A non-OK status closes the
  // connection as rejected (counted); its message says why.
  virtual Status Consume(const uint8_t* data, uint32_t size) = 0;
  // The connection ended: the peer closed it or FinishAll ended it (kEof), or a Consume failed
  // (kRejected). Called once, after the descriptor was closed; the handler is destroyed after.
  virtual void End(EndReason reason) = 0;
};

using HandlerFactory = std::function<std::unique_ptr<ConnectionHandler>(const PeerInfo& peer)>;

struct ServerOptions {
  // Connections beyond this are accepted and closed at once (counted as rejected). Below the
  // usual RLIMIT_NOFILE soft limit of 1024, so accept() does not run out of descriptors first.
  uint32_t max_connections = 256;
  // Datagrams read from one connection (and connections accepted) per Service() call before the
  // next one's turn.
  uint32_t datagrams_per_turn = 64;
  // Each connection's ProcessTrace streams its analysis with these options.
  AnalysisOptions analysis;
  // Set: makes each connection's handler (`analysis` is then unused). Unset: a ProcessTrace per
  // connection, kept in finished_traces().
  HandlerFactory handler_factory;
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

  // Sends one datagram to an open connection without blocking (MSG_DONTWAIT | MSG_NOSIGNAL).
  // kNotFound when the connection has ended; kUnavailable when its socket is full or the send
  // failed otherwise (nothing was sent; the caller decides whether that peer is lost).
  Status Send(uint64_t connection_id, const uint8_t* data, uint32_t size);

  size_t open_connections() const { return connections_.size(); }
  const IngestStats& stats() const { return stats_; }
  // Traces of ended connections, in the order they ended: every one that said Hello, and those
  // that ended without a word (has_hello() false; the report counts them). A connection rejected
  // before its Hello leaves only its counts in stats().
  const std::vector<std::unique_ptr<ProcessTrace>>& finished_traces() const { return finished_; }

 private:
  struct Connection {  // keyed by its fd in connections_
    PeerInfo peer;
    std::unique_ptr<ConnectionHandler> handler;
  };
  using EndReason = ConnectionHandler::EndReason;
  class TraceHandler;

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
  std::unordered_map<uint64_t, int> fd_by_connection_id_;
  uint64_t next_connection_id_ = 1;
  std::vector<std::unique_ptr<ProcessTrace>> finished_;
  IngestStats stats_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_SOCKET_SERVER_H_
