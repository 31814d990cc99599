// The driver check behind `driver_missing` (runtime/cuda_presence.h): what counts as a CUDA
// runtime in the process image, ELF files that must not fool it, and its answer on this machine.
#include "runtime/cuda_presence.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "test_files.h"

namespace gpuattr::inject::testing {
namespace {

using test_support::ReadFile;
using test_support::WriteFile;

bool HostHasDriver() {
  struct stat status;
  return stat("/proc/driver/nvidia/version", &status) == 0 || stat("/dev/dxg", &status) == 0;
}

TEST_CASE("device code is recognised by its section, and nothing else fools the check",
          "[unit][cuda_presence]") {
  CHECK(HasCudaDeviceCode(FAKE_DEVICE_CODE_LIBRARY));
  CHECK_FALSE(HasCudaDeviceCode("/proc/self/exe"));  // this test links no CUDA runtime
  CHECK_FALSE(HasCudaDeviceCode("/nonexistent/libcudart.so.13"));
  test_support::TempDir dir;
  const std::string elf = ReadFile(FAKE_DEVICE_CODE_LIBRARY);
  REQUIRE(elf.size() > 64);
  WriteFile(dir.File("text"), "not an ELF file at all, but long enough to hold a header .......");
  CHECK_FALSE(HasCudaDeviceCode(dir.File("text").c_str()));
  WriteFile(dir.File("truncated.so"), elf.substr(0, 64));  // the header, no section table
  CHECK_FALSE(HasCudaDeviceCode(dir.File("truncated.so").c_str()));
  std::string huge = elf;
  const uint16_t sections = 0xffff;  // e_shnum: more sections than any object has
  std::memcpy(&huge[60], &sections, sizeof(sections));
  WriteFile(dir.File("huge.so"), huge);
  CHECK_FALSE(HasCudaDeviceCode(dir.File("huge.so").c_str()));
  std::string bad_names = elf;
  const uint16_t names_index = 0xfffe;  // e_shstrndx past the table
  std::memcpy(&bad_names[62], &names_index, sizeof(names_index));
  WriteFile(dir.File("bad_names.so"), bad_names);
  CHECK_FALSE(HasCudaDeviceCode(dir.File("bad_names.so").c_str()));
}

TEST_CASE("a process with a CUDA runtime and no driver is told apart from one without CUDA",
          "[unit][cuda_presence]") {
  char cause[320] = {};
  CHECK_FALSE(CudaRuntimeLoaded());
  CHECK_FALSE(FindMissingDriver(cause, sizeof(cause)));  // no CUDA here: nothing to say
  void* library = dlopen(FAKE_DEVICE_CODE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library != nullptr);
  CHECK(CudaRuntimeLoaded());
  if (HostHasDriver()) {
    CHECK_FALSE(FindMissingDriver(cause, sizeof(cause)));
  } else {
    REQUIRE(FindMissingDriver(cause, sizeof(cause)));
    CHECK_THAT(std::string(cause), Catch::Contains("libcuda.so.1"));
  }
  dlclose(library);
}

}  // namespace
}  // namespace gpuattr::inject::testing
