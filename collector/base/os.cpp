#include "base/os.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <system_error>

namespace gpuattr::collector {

uint64_t NowNs(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

StatusOr<sockaddr_un> UnixSocketAddress(const std::string& socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(address.sun_path)) {
    return InvalidArgumentError("socket path '" + socket_path + "' is empty or longer than " +
                                std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path, socket_path.data(), socket_path.size());
  return address;
}

Status CheckOutputPath(const std::string& output, const std::string& what) {
  namespace fs = std::filesystem;
  if (output.empty()) return InvalidArgumentError(what + " is empty");
  std::error_code error;
  if (fs::is_directory(output, error)) {
    return FailedPreconditionError(what + " '" + output + "' is a directory");
  }
  fs::path parent = fs::path(output).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, error)) {
    return FailedPreconditionError("the directory of " + what + " '" + output + "' does not exist");
  }
  if (access(parent.c_str(), W_OK | X_OK) != 0) {
    return FailedPreconditionError("cannot write " + what + " into '" + parent.string() +
                                   "': " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace gpuattr::collector
