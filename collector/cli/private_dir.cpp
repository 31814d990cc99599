#include "cli/private_dir.h"

#include <errno.h>
#include <stdlib.h>  // mkdtemp
#include <sys/un.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

namespace gpuattr::collector {

StatusOr<PrivateDir> PrivateDir::Create(size_t reserve) {
  constexpr char kTemplate[] = "/gpuattr-XXXXXX";
  constexpr size_t kSunPath = sizeof(sockaddr_un{}.sun_path);
  std::string base = "/tmp";
  const char* tmpdir = std::getenv("TMPDIR");
  // "<base>/gpuattr-XXXXXX/<socket>" must fit in sun_path with its NUL.
  if (tmpdir != nullptr && tmpdir[0] == '/' &&
      std::strlen(tmpdir) + (sizeof(kTemplate) - 1) + 1 + reserve < kSunPath) {
    base = tmpdir;
  }
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::string pattern = base + kTemplate;
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return UnavailableError("cannot create a private directory under " + base + ": " +
                            std::strerror(errno));
  }
  return PrivateDir(std::string(buffer.data()));
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

PrivateDir::~PrivateDir() {
  if (path_.empty()) return;
  std::error_code ignored;  // best effort: nothing useful to do when cleanup fails
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace gpuattr::collector
