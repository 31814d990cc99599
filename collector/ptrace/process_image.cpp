#include "ptrace/process_image.h"

#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gpuattr::collector {
namespace {

constexpr size_t kMaxElfBytes = 256u << 20;  // larger than any libc; bounds a hostile file

// What of the executable is read for its program headers: the linkers put them right after the
// ELF header, so this is more than any executable needs (a larger offset reads as no PT_INTERP).
constexpr size_t kExecutableHeaderBytes = 64u << 10;

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsGlibcLibc(std::string_view base) {
  return base == "libc.so.6" || (base.rfind("libc-2.", 0) == 0 && base.size() > 9 &&
                                 base.substr(base.size() - 3) == ".so");
}
bool IsGlibcLoader(std::string_view base) { return base.rfind("ld-linux", 0) == 0; }
bool IsMusl(std::string_view base) {
  return base.rfind("ld-musl-", 0) == 0 || base.rfind("libc.musl-", 0) == 0;
}

// A typed view of `bytes` at `offset`, or nullptr when it does not fit or is misaligned (a
// hostile file's offsets). The bytes start at a heap allocation, aligned for every ELF type.
template <typename T>
const T* At(std::string_view bytes, uint64_t offset, uint64_t count = 1) {
  if (offset > bytes.size() || count > (bytes.size() - offset) / sizeof(T)) return nullptr;
  if (offset % alignof(T) != 0) return nullptr;
  return reinterpret_cast<const T*>(bytes.data() + offset);
}

StatusOr<const Elf64_Ehdr*> ElfHeader(std::string_view elf) {
  const auto* header = At<Elf64_Ehdr>(elf, 0);
  if (header == nullptr || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0) {
    return DataLossError("not an ELF file");
  }
  if (header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB) {
    return DataLossError("not a 64-bit little-endian ELF file");
  }
  return header;
}

// The program headers, or an error when they do not lie inside the file.
StatusOr<std::pair<const Elf64_Phdr*, size_t>> ProgramHeaders(std::string_view elf) {
  GPUATTR_ASSIGN_OR_RETURN(const Elf64_Ehdr* header, ElfHeader(elf));
  if (header->e_phentsize != sizeof(Elf64_Phdr)) return DataLossError("odd program header size");
  const auto* headers = At<Elf64_Phdr>(elf, header->e_phoff, header->e_phnum);
  if (headers == nullptr) return DataLossError("program headers outside the file");
  return std::make_pair(headers, static_cast<size_t>(header->e_phnum));
}

// The ELF address the first loadable segment starts at, page-aligned: what the mapping of file
// offset 0 corresponds to (0 for every shared library the GNU linker makes).
StatusOr<uint64_t> FirstLoadAddress(std::string_view elf) {
  GPUATTR_ASSIGN_OR_RETURN(auto headers, ProgramHeaders(elf));
  for (size_t i = 0; i < headers.second; ++i) {
    const Elf64_Phdr& segment = headers.first[i];
    if (segment.p_type != PT_LOAD) continue;
    const uint64_t align = segment.p_align > 1 ? segment.p_align : 1;
    return segment.p_vaddr & ~(align - 1);
  }
  return DataLossError("no loadable segment");
}

// Parses one /proc/PID/maps line: "begin-end perms offset dev inode   path".
bool ParseMapsLine(const std::string& line, MappedRange* range, uint64_t* offset,
                   std::string* path) {
  std::istringstream fields(line);
  std::string addresses, perms, offset_text, device, inode;
  if (!(fields >> addresses >> perms >> offset_text >> device >> inode)) return false;
  const size_t dash = addresses.find('-');
  if (dash == std::string::npos) return false;
  char* end = nullptr;
  range->begin = std::strtoull(addresses.c_str(), &end, 16);
  range->end = std::strtoull(addresses.c_str() + dash + 1, &end, 16);
  *offset = std::strtoull(offset_text.c_str(), &end, 16);
  std::getline(fields >> std::ws, *path);
  return range->end > range->begin;
}

void AddMapping(std::optional<MappedObject>& object, const std::string& path,
                const MappedRange& range, uint64_t offset) {
  if (!object) object.emplace().path = path;
  if (object->path != path) return;  // a second copy (another namespace's): the first stands
  object->ranges.push_back(range);
  if (offset == 0 && (object->load_bias == 0 || range.begin < object->load_bias)) {
    object->load_bias = range.begin;
  }
}

}  // namespace

StatusOr<std::string> ReadFileBytes(const std::string& path, size_t limit, bool truncate) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT || error == ESRCH) return NotFoundError(path + " does not exist");
    if (error == EACCES || error == EPERM) {
      return PermissionDeniedError("cannot read " + path + ": " + std::strerror(error));
    }
    return UnavailableError("cannot read " + path + ": " + std::strerror(error));
  }
  std::string bytes;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    bytes.append(chunk, static_cast<size_t>(in.gcount()));
    if (bytes.size() > limit) {
      if (!truncate)
        return DataLossError(path + " is larger than " + std::to_string(limit) + " bytes");
      bytes.resize(limit);
      break;
    }
  }
  return bytes;
}

std::string ProcPath(pid_t pid, const std::string& tail) {
  return "/proc/" + std::to_string(pid) + "/" + tail;
}

std::string ProcessName(pid_t pid) {
  std::ifstream comm(ProcPath(pid, "comm"));
  std::string name;
  std::getline(comm, name);
  return name;
}

bool MappedObject::Contains(uint64_t address) const {
  return std::any_of(ranges.begin(), ranges.end(),
                     [address](const MappedRange& range) { return range.Contains(address); });
}

bool ProcessImage::MapsObjectNamed(std::string_view file_name) const {
  return std::find(objects.begin(), objects.end(), file_name) != objects.end();
}

StatusOr<ProcessImage> ReadProcessImage(pid_t pid) {
  const std::string maps_path = ProcPath(pid, "maps");
  std::ifstream maps(maps_path);
  if (!maps) {
    if (errno == EACCES || errno == EPERM) {
      return PermissionDeniedError("cannot read " + maps_path + ": " + std::strerror(errno));
    }
    return NotFoundError("process " + std::to_string(pid) + " does not exist");
  }
  ProcessImage image;
  std::string line;
  size_t lines = 0;
  while (std::getline(maps, line)) {
    ++lines;
    MappedRange range;
    uint64_t offset = 0;
    std::string path;
    if (!ParseMapsLine(line, &range, &offset, &path) || path.empty() || path[0] != '/') continue;
    const std::string_view base = BaseName(path);
    if (image.objects.empty() || image.objects.back() != base) image.objects.emplace_back(base);
    if (IsGlibcLibc(base)) AddMapping(image.libc, path, range, offset);
    if (IsGlibcLoader(base)) AddMapping(image.loader, path, range, offset);
    if (IsMusl(base)) image.musl = true;
    if (base.rfind("libtorch_python", 0) == 0) image.torch = true;
    if (base.rfind("libcuda.so", 0) == 0) image.cuda_driver = true;
  }
  if (lines == 0) {
    return NotFoundError("process " + std::to_string(pid) + " has no mappings (gone, or a zombie)");
  }
  StatusOr<std::string> exe =
      ReadFileBytes(ProcPath(pid, "exe"), kExecutableHeaderBytes, /*truncate=*/true);
  if (exe.ok()) {
    StatusOr<std::pair<const Elf64_Phdr*, size_t>> headers = ProgramHeaders(*exe);
    if (headers.ok()) {
      for (size_t i = 0; i < headers->second; ++i) {
        if (headers->first[i].p_type == PT_INTERP) image.interpreter = true;
      }
    }
  }
  return image;
}

StatusOr<uint64_t> FindDynamicSymbol(std::string_view elf, std::string_view name) {
  GPUATTR_ASSIGN_OR_RETURN(const Elf64_Ehdr* header, ElfHeader(elf));
  if (header->e_shentsize != sizeof(Elf64_Shdr)) return DataLossError("odd section header size");
  const auto* sections = At<Elf64_Shdr>(elf, header->e_shoff, header->e_shnum);
  if (sections == nullptr) return DataLossError("section headers outside the file");
  const Elf64_Shdr* symbols = nullptr;
  const Elf64_Shdr* versions = nullptr;
  for (size_t i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type == SHT_DYNSYM) symbols = &sections[i];
    if (sections[i].sh_type == SHT_GNU_versym) versions = &sections[i];
  }
  if (symbols == nullptr) return NotFoundError("no dynamic symbol table");
  if (symbols->sh_link >= header->e_shnum || symbols->sh_entsize != sizeof(Elf64_Sym)) {
    return DataLossError("a malformed dynamic symbol table");
  }
  const Elf64_Shdr& strings = sections[symbols->sh_link];
  const size_t count = symbols->sh_size / sizeof(Elf64_Sym);
  const auto* table = At<Elf64_Sym>(elf, symbols->sh_offset, count);
  const auto* text = At<char>(elf, strings.sh_offset, strings.sh_size);
  const auto* version_of =
      versions != nullptr ? At<Elf64_Half>(elf, versions->sh_offset, count) : nullptr;
  if (table == nullptr || text == nullptr) return DataLossError("symbols outside the file");
  for (size_t i = 0; i < count; ++i) {
    const Elf64_Sym& symbol = table[i];
    if (symbol.st_name >= strings.sh_size || symbol.st_shndx == SHN_UNDEF) continue;
    // A hidden version (bit 15) is an old compatibility definition, not what dlsym would find.
    if (version_of != nullptr && (version_of[i] & 0x8000) != 0) continue;
    const char* symbol_name = text + symbol.st_name;
    const size_t length = strnlen(symbol_name, strings.sh_size - symbol.st_name);
    if (std::string_view(symbol_name, length) == name)
      return static_cast<uint64_t>(symbol.st_value);
  }
  return NotFoundError("no symbol " + std::string(name));
}

StatusOr<LibcEntryPoints> FindLibcEntryPoints(pid_t pid, const MappedObject& libc) {
  GPUATTR_ASSIGN_OR_RETURN(std::string elf,
                           ReadFileBytes(ProcPath(pid, "root") + libc.path, kMaxElfBytes));
  GPUATTR_ASSIGN_OR_RETURN(uint64_t first_load, FirstLoadAddress(elf));
  const uint64_t bias = libc.load_bias - first_load;
  auto address = [&](std::string_view name) -> StatusOr<uint64_t> {
    GPUATTR_ASSIGN_OR_RETURN(uint64_t value, FindDynamicSymbol(elf, name));
    return bias + value;
  };
  LibcEntryPoints entry;
  StatusOr<uint64_t> dlopen = address("dlopen");
  if (dlopen.ok()) {
    entry.dlopen = *dlopen;
    GPUATTR_ASSIGN_OR_RETURN(entry.dlsym, address("dlsym"));
    GPUATTR_ASSIGN_OR_RETURN(entry.dlerror, address("dlerror"));
  } else {
    GPUATTR_ASSIGN_OR_RETURN(entry.dlopen, address("__libc_dlopen_mode"));
    GPUATTR_ASSIGN_OR_RETURN(entry.dlsym, address("__libc_dlsym"));
  }
  GPUATTR_ASSIGN_OR_RETURN(entry.errno_location, address("__errno_location"));
  return entry;
}

}  // namespace gpuattr::collector
