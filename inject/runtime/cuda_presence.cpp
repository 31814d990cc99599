#include "runtime/cuda_presence.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace gpuattr::inject {
namespace {

constexpr size_t kMaxSections = 1024;           // real objects have tens
constexpr size_t kMaxSectionNameBytes = 65536;  // .shstrtab; real ones have hundreds

Elf64_Shdr g_sections[kMaxSections];
char g_section_names[kMaxSectionNameBytes];

bool ReadAt(int fd, void* out, size_t size, uint64_t offset) noexcept {
  return pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

bool IsDeviceCodeSection(const char* name, size_t room) noexcept {
  for (const char* wanted : {".nv_fatbin", ".nvFatBinSegment"}) {
    const size_t length = strlen(wanted);
    if (room > length && memcmp(name, wanted, length + 1) == 0) return true;
  }
  return false;
}

bool SectionsHoldDeviceCode(int fd) noexcept {
  Elf64_Ehdr header;
  if (!ReadAt(fd, &header, sizeof(header), 0) || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shnum == 0 || header.e_shnum > kMaxSections || header.e_shstrndx >= header.e_shnum) {
    return false;
  }
  if (!ReadAt(fd, g_sections, header.e_shnum * sizeof(Elf64_Shdr), header.e_shoff)) return false;
  const Elf64_Shdr& names = g_sections[header.e_shstrndx];
  if (names.sh_size == 0 || names.sh_size > kMaxSectionNameBytes ||
      !ReadAt(fd, g_section_names, names.sh_size, names.sh_offset)) {
    return false;
  }
  for (size_t i = 0; i < header.e_shnum; ++i) {
    const uint32_t at = g_sections[i].sh_name;
    if (at < names.sh_size && IsDeviceCodeSection(g_section_names + at, names.sh_size - at)) {
      return true;
    }
  }
  return false;
}

// dl_iterate_phdr's callback: nonzero (stop) at the first object that is a CUDA runtime.
int FindRuntime(dl_phdr_info* info, size_t /*size*/, void* /*data*/) noexcept {
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') return HasCudaDeviceCode("/proc/self/exe") ? 1 : 0;
  const char* slash = strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  if (strncmp(base, "libcudart.so", strlen("libcudart.so")) == 0) return 1;
  return name[0] == '/' && HasCudaDeviceCode(name) ? 1 : 0;  // not the vDSO
}

bool Exists(const char* path) noexcept {
  struct stat status;
  return stat(path, &status) == 0;
}

}  // namespace

bool HasCudaDeviceCode(const char* path) noexcept {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool found = SectionsHoldDeviceCode(fd);
  close(fd);
  return found;
}

bool CudaRuntimeLoaded() noexcept { return dl_iterate_phdr(&FindRuntime, nullptr) != 0; }

bool FindMissingDriver(char* cause, size_t size) noexcept {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(driver);
    return false;
  }
  if (Exists("/proc/driver/nvidia/version") || Exists("/dev/dxg")) return false;
  if (!CudaRuntimeLoaded()) return false;
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(driver);
    return false;
  }
  const char* error = dlerror();
  snprintf(cause, size, "the CUDA runtime is loaded, but %s",
           error != nullptr ? error : "libcuda.so.1 cannot be loaded");
  return true;
}

}  // namespace gpuattr::inject
