// RedirectExports: makes every caller in the process that calls some of one loaded library's
// exported functions reach replacements instead, without the shim exporting a single name
// (exemplars §9.6). The CUPTI multiplexer (cupti_mux.h) uses it so that another CUPTI client in the
// process (Kineto inside torch.profiler) talks to the multiplexer, not to CUPTI itself.
//
// Two edits, both plain stores into this process's memory:
//   1. The library's own dynamic symbol table: each named function's st_value is changed so that
//      load base + st_value is the replacement. Every *later* lookup — dlsym with any handle
//      (RTLD_DEFAULT, RTLD_NEXT, the library's own), lazy PLT binding, the relocation of a library
//      loaded afterwards — then resolves to the replacement with the loader's own rules, so no
//      loader function is wrapped and no caller's identity (RTLD_NEXT, RUNPATH) changes.
//   2. Lookups that already happened: every other loaded object's GOT slots and absolute data
//      relocations (JUMP_SLOT, GLOB_DAT, ABS64) that name one of the functions and hold its
//      original address get the replacement. Pages the loader made read-only (RELRO) are made
//      writable for the store and read-only again.
// The library's own internal calls are untouched (a library linked -Bsymbolic, as libcupti is,
// never looks itself up). Function pointers a client saved from dlsym before the redirect keep
// the original: the one gap, which the caller documents.
//
// Never undone: a redirected function stays redirected for the life of the process image.
// Architectures: x86-64 and AArch64 (RELA relocations); elsewhere RedirectExports refuses.
// Threads: run while no other thread loads libraries would be ideal but is not required: each
// slot is one aligned 8-byte store, so a concurrent caller sees either function.
#ifndef GPUATTR_INJECT_CUPTI_EXPORT_REDIRECT_H_
#define GPUATTR_INJECT_CUPTI_EXPORT_REDIRECT_H_

#include <cstddef>

namespace gpuattr::inject {

struct ExportRedirect {
  const char* name = nullptr;   // the exported function
  void* replacement = nullptr;  // what its callers reach from now on
  void* original = nullptr;     // out: its address before (nullptr: the library has no such name)
};

struct RedirectOutcome {
  bool ok = false;
  size_t symbols_redirected = 0;  // dynamic symbol table entries changed
  size_t slots_rebound = 0;       // GOT and data slots of other objects changed
  char error[160] = {};           // why not, when !ok
};

// `library`: a dlopen handle of the library whose exports are redirected. Names the library
// lacks are skipped (their `original` stays nullptr).
RedirectOutcome RedirectExports(void* library, ExportRedirect* redirects, size_t count) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_EXPORT_REDIRECT_H_
