#include "cli/daemon_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/os.h"
#include "cli/child_process.h"

namespace gpuattr::collector {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

// The directory that holds the socket: created 0700 when missing, else it must be a directory
// (not a link to one) of ours that group and others cannot open.
Status PrepareDirectory(const std::string& directory) {
  if (mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    return PermissionDeniedError("cannot create the socket directory " + directory + ": " +
                                 ErrnoText(errno));
  }
  struct stat info {};
  if (lstat(directory.c_str(), &info) != 0) {
    return PermissionDeniedError("cannot inspect the socket directory " + directory + ": " +
                                 ErrnoText(errno));
  }
  if (!S_ISDIR(info.st_mode)) {
    return PermissionDeniedError("the socket directory " + directory + " is not a directory");
  }
  if (info.st_uid != geteuid()) {
    return PermissionDeniedError("the socket directory " + directory + " belongs to uid " +
                                 std::to_string(info.st_uid) + ", not to us (" +
                                 std::to_string(geteuid()) + ")");
  }
  if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return PermissionDeniedError("the socket directory " + directory + " has mode " + mode +
                                 ": group and others must have no access (chmod 700)");
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultDaemonSocketPath() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  if (runtime_dir != nullptr && runtime_dir[0] == '/') {
    std::string base = runtime_dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return base + "/gpuattr/daemon.sock";
  }
  return "/tmp/gpuattr-" + std::to_string(geteuid()) + "/daemon.sock";
}

std::string DaemonSocketPath(const std::string& socket_flag) {
  if (!socket_flag.empty()) return socket_flag;
  const char* from_environment = std::getenv(kSocketEnv);
  if (from_environment != nullptr && from_environment[0] != '\0') return from_environment;
  return DefaultDaemonSocketPath();
}

Status ClaimDaemonSocket(const std::string& socket_path) {
  GPUATTR_ASSIGN_OR_RETURN(const sockaddr_un address, UnixSocketAddress(socket_path));
  std::string directory = std::filesystem::path(socket_path).parent_path().string();
  if (directory.empty()) directory = ".";
  GPUATTR_RETURN_IF_ERROR(PrepareDirectory(directory));

  struct stat info {};
  if (lstat(socket_path.c_str(), &info) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return FailedPreconditionError("cannot inspect " + socket_path + ": " + ErrnoText(errno));
  }
  if (!S_ISSOCK(info.st_mode) || info.st_uid != geteuid()) {
    return FailedPreconditionError(socket_path +
                                   " exists and is not a socket of ours; remove it or choose "
                                   "another path with --socket");
  }
  const int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (probe < 0) return InternalError("socket(AF_UNIX, SOCK_SEQPACKET): " + ErrnoText(errno));
  const int connected =
      connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int connect_error = errno;
  close(probe);
  if (connected == 0) {
    return FailedPreconditionError("a gpuattr daemon already listens on " + socket_path);
  }
  if (connect_error != ECONNREFUSED) {
    return FailedPreconditionError("cannot tell whether a daemon listens on " + socket_path + ": " +
                                   ErrnoText(connect_error));
  }
  // Nothing accepts: the socket of a daemon that is gone.
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return FailedPreconditionError("cannot remove the stale socket " + socket_path + ": " +
                                   ErrnoText(errno));
  }
  return Status::Ok();
}

StatusOr<int> ConnectToDaemon(const std::string& socket_path) {
  GPUATTR_ASSIGN_OR_RETURN(const sockaddr_un address, UnixSocketAddress(socket_path));
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError("socket(AF_UNIX, SOCK_SEQPACKET): " + ErrnoText(errno));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    close(fd);
    return UnavailableError("no gpuattr daemon listens on " + socket_path + ": " +
                            ErrnoText(error));
  }
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    const int error = errno;
    close(fd);
    return UnavailableError("SO_PEERCRED on " + socket_path + ": " + ErrnoText(error));
  }
  if (credentials.uid != geteuid()) {
    close(fd);
    return PermissionDeniedError("the daemon on " + socket_path + " runs as uid " +
                                 std::to_string(credentials.uid) + ", not as us (" +
                                 std::to_string(geteuid()) + ")");
  }
  return fd;
}

}  // namespace gpuattr::collector
