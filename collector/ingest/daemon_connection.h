// DaemonServer's record of one connection (daemon_server.h): who is on it (a traced process, an
// armed one, an attach client) and, for an armed process, the window it was asked for. Private to
// the daemon's translation units (daemon_server.cpp, daemon_attach.cpp).
#ifndef GPUATTR_COLLECTOR_INGEST_DAEMON_CONNECTION_H_
#define GPUATTR_COLLECTOR_INGEST_DAEMON_CONNECTION_H_

#include <cstdint>
#include <memory>

#include "analysis/process_trace.h"
#include "ingest/daemon_server.h"

namespace gpuattr::collector {

struct DaemonServer::Connection {
  enum class Role { kUnknown, kTraced, kArmed, kAttachClient };
  enum class Stream { kNone, kFeeding, kDiscarding };  // an armed connection's window stream

  PeerInfo peer;
  Role role = Role::kUnknown;
  uint64_t accepted_ns = 0;
  uint64_t accepted_realtime_ns = 0;
  uint64_t sequence_out = 0;  // messages we sent on it

  std::unique_ptr<ProcessTrace> trace;  // kTraced

  // kArmed: who registered, and the window it was asked for (attach_number 0: none).
  uint32_t pid = 0;
  int32_t rank = -1;
  uint32_t windows_opened = 0;
  uint64_t attach_number = 0;
  uint32_t window_id = 0;
  Stream stream = Stream::kNone;
  std::unique_ptr<ProcessTrace> window_trace;  // while kFeeding
  bool said_goodbye = false;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_DAEMON_CONNECTION_H_
