// The pure parts of `gpuattr attach` and `gpuattr daemon`: durations as typed, and the default
// socket path (docs/attach.md).
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "cli/attach_command.h"
#include "cli/daemon_socket.h"

namespace gpuattr::collector {
namespace {

uint64_t Duration(const std::string& text) {
  StatusOr<uint64_t> parsed = ParseDuration(text);
  INFO(text << ": " << parsed.status().ToString());
  REQUIRE(parsed.ok());
  return *parsed;
}

// Sets or unsets an environment variable for a scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("durations take s, ms, m and h suffixes or plain seconds", "[attach][cli]") {
  CHECK(Duration("30s") == 30'000'000'000ull);
  CHECK(Duration("500ms") == 500'000'000ull);
  CHECK(Duration("2m") == 120'000'000'000ull);
  CHECK(Duration("1h") == 3'600'000'000'000ull);
  CHECK(Duration("45") == 45'000'000'000ull);
  CHECK(Duration("0.25") == 250'000'000ull);
  CHECK(Duration("1.5s") == 1'500'000'000ull);
}

TEST_CASE("durations that are empty, zero, negative, malformed or over a week are refused",
          "[attach][cli]") {
  for (const char* text :
       {"", "0", "0s", "-1s", "s", "ms", "1.2.3s", "10x", "1 s", "abc", ".", "8d", "169h", "1e3"}) {
    INFO("'" << text << "'");
    const StatusOr<uint64_t> parsed = ParseDuration(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("the default daemon socket is under XDG_RUNTIME_DIR, else /tmp/gpuattr-UID",
          "[daemon][cli]") {
  {
    ScopedEnv runtime("XDG_RUNTIME_DIR", "/run/user/1000/");
    CHECK(DefaultDaemonSocketPath() == "/run/user/1000/gpuattr/daemon.sock");
  }
  const std::string fallback = "/tmp/gpuattr-" + std::to_string(geteuid()) + "/daemon.sock";
  {
    ScopedEnv runtime("XDG_RUNTIME_DIR", nullptr);
    CHECK(DefaultDaemonSocketPath() == fallback);
  }
  {
    ScopedEnv runtime("XDG_RUNTIME_DIR", "relative/dir");  // not absolute: not used
    CHECK(DefaultDaemonSocketPath() == fallback);
  }
}

TEST_CASE("daemon, attach and run --armed take --socket, else GPUATTR_SOCKET, as the shim does",
          "[daemon][cli]") {
  ScopedEnv runtime("XDG_RUNTIME_DIR", "/run/user/1000");
  {
    ScopedEnv socket("GPUATTR_SOCKET", "/tmp/job/gpuattr.sock");
    CHECK(DaemonSocketPath("") == "/tmp/job/gpuattr.sock");
    CHECK(DaemonSocketPath("/tmp/flag.sock") == "/tmp/flag.sock");
  }
  {
    ScopedEnv socket("GPUATTR_SOCKET", "");  // set but empty: as if unset
    CHECK(DaemonSocketPath("") == "/run/user/1000/gpuattr/daemon.sock");
  }
  ScopedEnv socket("GPUATTR_SOCKET", nullptr);
  CHECK(DaemonSocketPath("") == "/run/user/1000/gpuattr/daemon.sock");
}

}  // namespace gpuattr::collector
