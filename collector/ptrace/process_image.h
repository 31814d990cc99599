// What `gpuattr attach` needs to know of a running process before it stops one of its threads
// (docs/attach.md §Injection): where its C library and dynamic loader are mapped, and the
// run-time addresses of the libc functions a remote call uses (dlopen, dlsym, dlerror,
// __errno_location), found from the target's own /proc/PID/maps and the dynamic symbol table
// of the libc file it mapped, never from our own process or a hard-coded offset.
//
// Every byte read here comes from another process or a file: each is checked (bounds, ELF
// class, section links); a malformed image is an error, never a crash. Runs on: any thread.
#ifndef GPUATTR_COLLECTOR_PTRACE_PROCESS_IMAGE_H_
#define GPUATTR_COLLECTOR_PTRACE_PROCESS_IMAGE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

// An address range [begin, end) of one mapping.
struct MappedRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool Contains(uint64_t address) const { return address >= begin && address < end; }
};

// One shared object as the target mapped it.
struct MappedObject {
  std::string path;        // as /proc/PID/maps names it (in the target's mount namespace)
  uint64_t load_bias = 0;  // run-time address of its ELF address 0
  std::vector<MappedRange> ranges;
  bool Contains(uint64_t address) const;
};

// The libc entry points a remote library load calls, at their run-time addresses in the target.
// glibc 2.34 and later define dlopen/dlsym/dlerror in libc itself; older ones only export the
// private __libc_dlopen_mode/__libc_dlsym there (dlerror is then 0: no message on failure).
struct LibcEntryPoints {
  uint64_t dlopen = 0;
  uint64_t dlsym = 0;
  uint64_t dlerror = 0;  // 0 when this libc has none
  uint64_t errno_location = 0;
};

struct ProcessImage {
  std::optional<MappedObject> libc;    // glibc's libc.so.6
  std::optional<MappedObject> loader;  // the dynamic loader (ld-linux*.so*)
  bool musl = false;                   // a musl libc or loader is mapped
  bool interpreter = false;            // the executable names a dynamic loader (PT_INTERP)
  bool torch = false;                  // libtorch_python is mapped (a Python process with torch)
  bool cuda_driver = false;            // libcuda.so* is mapped (the process reached CUDA's driver)
  std::vector<std::string> objects;    // the file name (no directory) of every mapped file

  bool MapsObjectNamed(std::string_view file_name) const;
};

// "/proc/PID/TAIL".
std::string ProcPath(pid_t pid, const std::string& tail);

// The process's command name (/proc/PID/comm); empty when it cannot be read.
std::string ProcessName(pid_t pid);

// The file's bytes. `truncate`: at most `limit` of them; else more than `limit` is kDataLoss.
// kNotFound when it does not exist, kPermissionDenied when it may not be read.
StatusOr<std::string> ReadFileBytes(const std::string& path, size_t limit, bool truncate = false);

// Reads /proc/PID/maps and the executable's program headers. kNotFound when the process is gone.
StatusOr<ProcessImage> ReadProcessImage(pid_t pid);

// The run-time addresses of the entry points in `libc`, read from the file the target mapped
// (through /proc/PID/root, so a target in another mount namespace is read right).
StatusOr<LibcEntryPoints> FindLibcEntryPoints(pid_t pid, const MappedObject& libc);

// The value (ELF address) of the default version of dynamic symbol `name` in the ELF file
// `elf`, held in memory; kNotFound when it does not define it, kDataLoss when malformed.
StatusOr<uint64_t> FindDynamicSymbol(std::string_view elf, std::string_view name);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_PTRACE_PROCESS_IMAGE_H_
