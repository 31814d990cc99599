// Small wrappers over the operating system that several collector commands share: clocks, the
// host name, a Unix socket address, and the check that an output file can be written where the
// user asked, made before the work rather than after it.
#ifndef GPUATTR_COLLECTOR_BASE_OS_H_
#define GPUATTR_COLLECTOR_BASE_OS_H_

#include <sys/un.h>
#include <time.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace gpuattr::collector {

// `clock` now, in nanoseconds.
uint64_t NowNs(clockid_t clock);

// gethostname, or "" when it fails.
std::string HostName();

// The AF_UNIX address of `socket_path`; InvalidArgument when it is empty or does not fit
// sun_path.
StatusOr<sockaddr_un> UnixSocketAddress(const std::string& socket_path);

// kFailedPrecondition (the commands' one exit status for an output that cannot be written, 4)
// unless `output` names a file (not a directory) in an existing directory we may write into;
// kInvalidArgument when it is empty. `what` names it in messages ("the report path (-o)").
Status CheckOutputPath(const std::string& output, const std::string& what);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_BASE_OS_H_
