// PrivateDir: a fresh directory only this user can open (mkdtemp, mode 0700), removed with its
// contents when the object goes. The collector's socket lives in one (DESIGN §4), so no other
// user can even reach it; the SO_PEERCRED uid check is the second line of defence.
// Owned by the main thread.
#ifndef GPUATTR_COLLECTOR_CLI_PRIVATE_DIR_H_
#define GPUATTR_COLLECTOR_CLI_PRIVATE_DIR_H_

#include <string>

#include "base/status.h"

namespace gpuattr::collector {

class PrivateDir {
 public:
  // Creates `<base>/gpuattr-XXXXXX`, where base is $TMPDIR when it is set and leaves room for a
  // socket name of `reserve` bytes inside sun_path, else /tmp.
  static StatusOr<PrivateDir> Create(size_t reserve);

  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&&) = delete;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  const std::string& path() const { return path_; }

 private:
  explicit PrivateDir(std::string path) : path_(std::move(path)) {}
  std::string path_;  // empty once moved from
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_PRIVATE_DIR_H_
