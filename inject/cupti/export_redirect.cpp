#include "cupti/export_redirect.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace gpuattr::inject {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_X86_64_GLOB_DAT;
constexpr uint32_t kAbsolute64 = R_X86_64_64;
constexpr bool kSupported = true;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_AARCH64_GLOB_DAT;
constexpr uint32_t kAbsolute64 = R_AARCH64_ABS64;
constexpr bool kSupported = true;
#else
constexpr uint32_t kJumpSlot = 0;
constexpr uint32_t kGlobalData = 0;
constexpr uint32_t kAbsolute64 = 0;
constexpr bool kSupported = false;
#endif

// What one loaded object's dynamic section says, with addresses made absolute.
struct DynamicView {
  uintptr_t base = 0;
  const ElfW(Phdr) * phdrs = nullptr;
  size_t phdr_count = 0;
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  const ElfW(Rela) * rela = nullptr;
  size_t rela_bytes = 0;
  const ElfW(Rela) * plt_rela = nullptr;
  size_t plt_rela_bytes = 0;
  bool plt_is_rela = true;
};

// glibc relocates the d_ptr entries of a writable dynamic section in place; the vDSO's stay
// relative to its base.
uintptr_t Absolute(uintptr_t base, ElfW(Addr) pointer) {
  return pointer < base ? base + pointer : pointer;
}

bool ReadDynamic(uintptr_t base, const ElfW(Phdr) * phdrs, size_t count, DynamicView* view) {
  view->base = base;
  view->phdrs = phdrs;
  view->phdr_count = count;
  const ElfW(Dyn)* dynamic = nullptr;
  for (size_t i = 0; i < count; ++i) {
    if (phdrs[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(base + phdrs[i].p_vaddr);
    }
  }
  if (dynamic == nullptr) return false;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    const uintptr_t pointer = Absolute(base, entry->d_un.d_ptr);
    switch (entry->d_tag) {
      case DT_SYMTAB:
        view->symbols = reinterpret_cast<const ElfW(Sym)*>(pointer);
        break;
      case DT_STRTAB:
        view->strings = reinterpret_cast<const char*>(pointer);
        break;
      case DT_GNU_HASH:
        view->gnu_hash = reinterpret_cast<const uint32_t*>(pointer);
        break;
      case DT_HASH:
        view->sysv_hash = reinterpret_cast<const uint32_t*>(pointer);
        break;
      case DT_RELA:
        view->rela = reinterpret_cast<const ElfW(Rela)*>(pointer);
        break;
      case DT_RELASZ:
        view->rela_bytes = entry->d_un.d_val;
        break;
      case DT_JMPREL:
        view->plt_rela = reinterpret_cast<const ElfW(Rela)*>(pointer);
        break;
      case DT_PLTRELSZ:
        view->plt_rela_bytes = entry->d_un.d_val;
        break;
      case DT_PLTREL:
        view->plt_is_rela = entry->d_un.d_val == DT_RELA;
        break;
      default:
        break;
    }
  }
  return view->symbols != nullptr && view->strings != nullptr;
}

// The number of dynamic symbols: DT_HASH's nchain, or the end of the last GNU hash chain.
size_t SymbolCount(const DynamicView& view) {
  if (view.sysv_hash != nullptr) return view.sysv_hash[1];
  if (view.gnu_hash == nullptr) return 0;
  const uint32_t bucket_count = view.gnu_hash[0];
  const uint32_t first_hashed = view.gnu_hash[1];
  const uint32_t bloom_words = view.gnu_hash[2];
  const auto* buckets = reinterpret_cast<const uint32_t*>(
      reinterpret_cast<const ElfW(Addr)*>(view.gnu_hash + 4) + bloom_words);
  const uint32_t* chains = buckets + bucket_count;
  uint32_t last = 0;
  for (uint32_t i = 0; i < bucket_count; ++i) last = buckets[i] > last ? buckets[i] : last;
  if (last < first_hashed) return first_hashed;
  while ((chains[last - first_hashed] & 1u) == 0) ++last;
  return last + 1;
}

// The protection the loader left on the page holding `address`: its PT_LOAD's flags, less
// PROT_WRITE inside the page-aligned part of PT_GNU_RELRO (as the loader computes it).
int PageProtection(const DynamicView& view, uintptr_t address) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  int protection = PROT_READ;
  for (size_t i = 0; i < view.phdr_count; ++i) {
    const ElfW(Phdr)& header = view.phdrs[i];
    const uintptr_t start = view.base + header.p_vaddr;
    if (header.p_type == PT_LOAD && address >= start && address < start + header.p_memsz) {
      protection = ((header.p_flags & PF_R) != 0 ? PROT_READ : 0) |
                   ((header.p_flags & PF_W) != 0 ? PROT_WRITE : 0) |
                   ((header.p_flags & PF_X) != 0 ? PROT_EXEC : 0);
    }
  }
  for (size_t i = 0; i < view.phdr_count; ++i) {
    const ElfW(Phdr)& header = view.phdrs[i];
    if (header.p_type != PT_GNU_RELRO) continue;
    const uintptr_t start = (view.base + header.p_vaddr) & ~(page - 1);
    const uintptr_t end = (view.base + header.p_vaddr + header.p_memsz) & ~(page - 1);
    if (address >= start && address < end) protection &= ~PROT_WRITE;
  }
  return protection;
}

// One aligned 8-byte store, opening the page for it when the loader closed it.
bool StoreWord(const DynamicView& view, uintptr_t address, uint64_t value) {
  const int protection = PageProtection(view, address);
  auto* word = reinterpret_cast<uint64_t*>(address);
  if ((protection & PROT_WRITE) != 0) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
    return true;
  }
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
  if (mprotect(page, page_size, protection | PROT_WRITE) != 0) return false;
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
  mprotect(page, page_size, protection);
  return true;
}

const ExportRedirect* FindRedirect(const char* name, const ExportRedirect* redirects,
                                   size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (redirects[i].original != nullptr && strcmp(redirects[i].name, name) == 0) {
      return &redirects[i];
    }
  }
  return nullptr;
}

struct RebindContext {
  uintptr_t library_base;
  const ExportRedirect* redirects;
  size_t count;
  size_t rebound;
};

void RebindTable(const DynamicView& view, const ElfW(Rela) * table, size_t bytes,
                 RebindContext* context) {
  if (table == nullptr) return;
  for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
    const ElfW(Rela)& relocation = table[i];
    const uint32_t type = static_cast<uint32_t>(ELF64_R_TYPE(relocation.r_info));
    const size_t symbol = ELF64_R_SYM(relocation.r_info);
    if (symbol == 0 || (type != kJumpSlot && type != kGlobalData && type != kAbsolute64)) continue;
    if (type == kAbsolute64 && relocation.r_addend != 0) continue;
    const ExportRedirect* redirect = FindRedirect(view.strings + view.symbols[symbol].st_name,
                                                  context->redirects, context->count);
    if (redirect == nullptr) continue;
    const uintptr_t slot = view.base + relocation.r_offset;
    if (*reinterpret_cast<const uint64_t*>(slot) !=
        reinterpret_cast<uintptr_t>(redirect->original)) {
      continue;  // lazy and not yet bound (it will bind to the replacement), or another symbol
    }
    if (StoreWord(view, slot, reinterpret_cast<uintptr_t>(redirect->replacement))) {
      ++context->rebound;
    }
  }
}

int RebindObject(dl_phdr_info* info, size_t, void* data) {
  auto* context = static_cast<RebindContext*>(data);
  const uintptr_t base = info->dlpi_addr;
  if (base == context->library_base) return 0;
  if (info->dlpi_name != nullptr && strstr(info->dlpi_name, "linux-vdso") != nullptr) return 0;
  DynamicView view;
  if (!ReadDynamic(base, info->dlpi_phdr, info->dlpi_phnum, &view)) return 0;
  RebindTable(view, view.rela, view.rela_bytes, context);
  if (view.plt_is_rela) RebindTable(view, view.plt_rela, view.plt_rela_bytes, context);
  return 0;
}

struct FindContext {
  uintptr_t base;
  DynamicView view;
  bool found;
};

int FindObject(dl_phdr_info* info, size_t, void* data) {
  auto* context = static_cast<FindContext*>(data);
  if (info->dlpi_addr != context->base) return 0;
  context->found = ReadDynamic(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &context->view);
  return 1;
}

}  // namespace

RedirectOutcome RedirectExports(void* library, ExportRedirect* redirects, size_t count) noexcept {
  RedirectOutcome outcome;
  if (!kSupported) {
    snprintf(outcome.error, sizeof(outcome.error), "not supported on this architecture");
    return outcome;
  }
  link_map* map = nullptr;
  if (library == nullptr || dlinfo(library, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) {
    snprintf(outcome.error, sizeof(outcome.error), "the library handle has no link map");
    return outcome;
  }
  FindContext target{map->l_addr, {}, false};
  dl_iterate_phdr(&FindObject, &target);
  if (!target.found) {
    snprintf(outcome.error, sizeof(outcome.error), "the library has no dynamic symbol table");
    return outcome;
  }
  for (size_t i = 0; i < count; ++i) redirects[i].original = dlsym(library, redirects[i].name);

  // 1. The library's own symbol table: later lookups find the replacements.
  const DynamicView& view = target.view;
  const size_t symbols = SymbolCount(view);
  for (size_t index = 1; index < symbols; ++index) {
    const ElfW(Sym)& symbol = view.symbols[index];
    if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
    const ExportRedirect* redirect = FindRedirect(view.strings + symbol.st_name, redirects, count);
    if (redirect == nullptr ||
        view.base + symbol.st_value != reinterpret_cast<uintptr_t>(redirect->original)) {
      continue;
    }
    // Modular arithmetic: the loader adds the base back.
    const uint64_t value = reinterpret_cast<uintptr_t>(redirect->replacement) - view.base;
    const auto address = reinterpret_cast<uintptr_t>(&symbol.st_value);
    if (!StoreWord(view, address, value)) {
      snprintf(outcome.error, sizeof(outcome.error),
               "cannot write the library's symbol table (mprotect refused)");
      return outcome;
    }
    ++outcome.symbols_redirected;
  }

  // 2. Lookups already made by every other object (the shim's own included: it binds CUPTI
  // through its table, so it has no such slot).
  RebindContext context{view.base, redirects, count, 0};
  dl_iterate_phdr(&RebindObject, &context);
  outcome.slots_rebound = context.rebound;
  outcome.ok = true;
  return outcome;
}

}  // namespace gpuattr::inject
