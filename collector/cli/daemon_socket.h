// Where the gpuattr daemon listens, and how its socket is claimed and reached (docs/attach.md).
//
//   default path   $XDG_RUNTIME_DIR/gpuattr/daemon.sock, else /tmp/gpuattr-$UID/daemon.sock
//   directory      created mode 0700; an existing one must be ours and closed to group and
//                  others (kPermissionDenied otherwise): no other user can reach the socket, and
//                  the SO_PEERCRED uid check behind it is the second line of defence
//   claiming       a path a live daemon answers on is refused (kFailedPrecondition); a stale
//                  socket (nothing accepts) of ours is removed; anything else there is refused
//   reaching       a client (gpuattr attach, gpuattr run --armed) connects and checks with
//                  SO_PEERCRED that the listener runs under its own uid
//
// Called on the main thread of the daemon, attach and run --armed commands.
#ifndef GPUATTR_COLLECTOR_CLI_DAEMON_SOCKET_H_
#define GPUATTR_COLLECTOR_CLI_DAEMON_SOCKET_H_

#include <string>

#include "base/status.h"

namespace gpuattr::collector {

// The default socket path from $XDG_RUNTIME_DIR (used when it is an absolute path) and the uid.
std::string DefaultDaemonSocketPath();

// The socket the daemon, attach and run --armed use, in the shim's order: `--socket` when given
// (non-empty), else $GPUATTR_SOCKET when set and non-empty, else DefaultDaemonSocketPath().
std::string DaemonSocketPath(const std::string& socket_flag);

// Makes `socket_path` ready for SocketServer::Listen: its directory created 0700 or checked (see
// above), a stale socket removed. kPermissionDenied: the directory is not safely ours;
// kFailedPrecondition: a live daemon listens there, or something that is not our stale socket
// is in the way; kInvalidArgument: the path does not fit in sun_path.
Status ClaimDaemonSocket(const std::string& socket_path);

// A connected, blocking, close-on-exec SOCK_SEQPACKET socket to the daemon at `socket_path`.
// kUnavailable when nothing accepts there; kPermissionDenied when the listener runs under
// another uid (the descriptor is closed then).
StatusOr<int> ConnectToDaemon(const std::string& socket_path);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_DAEMON_SOCKET_H_
