#include "runtime/late_attach.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>

#include "cupti/subscriber.h"
#include "runtime/session.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

// The driver API's signatures (cuda.h), resolved by name: the shim links no CUDA library.
using DeviceGetCountFunction = int (*)(int* count);
using DeviceGetNameFunction = int (*)(char* name, int length, int device);

constexpr int kMaxNamedDevices = 64;
constexpr char kTorchPythonLibrary[] = "libtorch_python.so";

std::atomic<bool> g_attached_late{false};

// Whether torch's Python bindings (libtorch_python.so*, whatever its version suffix) are among the
// loaded objects; loads nothing.
bool TorchLoaded() noexcept {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* found_flag) {
        const char* slash = info->dlpi_name != nullptr ? strrchr(info->dlpi_name, '/') : nullptr;
        const char* name = slash != nullptr ? slash + 1 : info->dlpi_name;
        if (name != nullptr &&
            strncmp(name, kTorchPythonLibrary, sizeof(kTorchPythonLibrary) - 1) == 0) {
          *static_cast<bool*>(found_flag) = true;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

}  // namespace

int StartLateAttach(const char* socket_path) noexcept {
  // Set first: the session's flush thread may open a window as soon as it runs.
  g_attached_late.store(true, std::memory_order_release);
  const int started = StartArmedSession(socket_path);
  // A session that was running already (the shim was there from the start) is not late.
  if (started <= 0) g_attached_late.store(false, std::memory_order_release);
  return started > 0    ? kLateAttachStarted
         : started == 0 ? kLateAttachHadSession
                        : kLateAttachFailed;
}

bool AttachedLate() noexcept { return g_attached_late.load(std::memory_order_acquire); }

uint16_t WindowBeginFlags() noexcept {
  if (!AttachedLate()) return 0;
  return TorchLoaded() ? wire::kWindowBeginFlagLateAttach | wire::kWindowBeginFlagTorchLoaded
                       : wire::kWindowBeginFlagLateAttach;
}

void EmitDriverDeviceNames() noexcept {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void* scope = driver != nullptr ? driver : RTLD_DEFAULT;
  const auto get_count = reinterpret_cast<DeviceGetCountFunction>(dlsym(scope, "cuDeviceGetCount"));
  const auto get_name = reinterpret_cast<DeviceGetNameFunction>(dlsym(scope, "cuDeviceGetName"));
  int count = 0;
  if (get_count != nullptr && get_name != nullptr && get_count(&count) == 0) {
    for (int device = 0; device < count && device < kMaxNamedDevices; ++device) {
      char name[256] = {};
      if (get_name(name, sizeof(name) - 1, device) == 0) {
        EmitShimDevice(static_cast<uint32_t>(device), name);
      }
    }
  }
  if (driver != nullptr) dlclose(driver);
}

}  // namespace gpuattr::inject
