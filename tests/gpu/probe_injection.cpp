// probe_injection: the injection library cupti_questions loads into its children to answer
// cupti-notes §10 questions 6 and 8 (docs/gpu-validation.md). Test equipment only: gpuattr never
// loads it; it is built with the GPU tier (GPUATTR_BUILD_GPU_TESTS).
//
//   InitializeInjection       - appends "InitializeInjection pid P returning R" to
//                               $PROBE_INJECTION_LOG and returns $PROBE_INJECTION_RETURN
//                               (default 1). Question 6: is it found under LD_PRELOAD alone, how
//                               often is it called when both LD_PRELOAD and CUDA_INJECTION64_PATH
//                               name it, what does 0 do?
//   InitializeInjectionNvtx2  - when $PROBE_NVTX_CHAIN_CUPTI names a libcupti, calls its
//                               cuptiNvtxInitialize2 first, reads back the RangePushA handler
//                               CUPTI installed and wraps it with a counting handler that calls
//                               through (question 8: does chaining work beside one's own
//                               handlers?). Logs what it found.
//   probe_injection_push_count - how often the wrapper ran (read through dlopen RTLD_NOLOAD).
//
// Threads: the Initialize functions run on whichever thread makes the first CUDA or NVTX call;
// the wrapper runs on any thread (an atomic counter and a pointer written once before NVTX can
// call it).
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define PROBE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::atomic<unsigned long long> g_wrapped_pushes{0};
nvtxRangePushA_impl_fntype g_chained_push = nullptr;

// Appends `line` to $PROBE_INJECTION_LOG with one write(), so concurrent writers never interleave.
void Log(const char* line) {
  const char* path = std::getenv("PROBE_INJECTION_LOG");
  if (path == nullptr || path[0] == '\0') return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const ssize_t written = write(fd, line, std::strlen(line));
  (void)written;
  close(fd);
}

int NVTX_API CountingRangePushA(const char* message) {
  g_wrapped_pushes.fetch_add(1, std::memory_order_relaxed);
  return g_chained_push != nullptr ? g_chained_push(message) : 0;
}

// The RangePushA slot of the CORE module, or null when the export table does not offer it.
NvtxFunctionPointer* RangePushASlot(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return nullptr;
  NvtxFunctionTable core = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) == 0 ||
      core == nullptr || NVTX_CBID_CORE_RangePushA >= size) {
    return nullptr;
  }
  return core[NVTX_CBID_CORE_RangePushA];
}

}  // namespace

PROBE_EXPORT int InitializeInjection(void) {
  const char* value = std::getenv("PROBE_INJECTION_RETURN");
  const int result = value != nullptr ? std::atoi(value) : 1;
  char line[96];
  std::snprintf(line, sizeof(line), "InitializeInjection pid %d returning %d\n",
                static_cast<int>(getpid()), result);
  Log(line);
  return result;
}

PROBE_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  NvtxFunctionPointer* slot =
      get_export_table != nullptr ? RangePushASlot(get_export_table) : nullptr;
  if (slot == nullptr) {
    Log("InitializeInjectionNvtx2 no CORE table\n");
    return 0;
  }
  const char* cupti_path = std::getenv("PROBE_NVTX_CHAIN_CUPTI");
  if (cupti_path != nullptr && cupti_path[0] != '\0') {
    void* cupti = dlopen(cupti_path, RTLD_NOW | RTLD_LOCAL);
    using InitializeFn = int (*)(NvtxGetExportTableFunc_t);
    auto initialize = cupti != nullptr
                          ? reinterpret_cast<InitializeFn>(dlsym(cupti, "cuptiNvtxInitialize2"))
                          : nullptr;
    if (initialize == nullptr) {
      Log("InitializeInjectionNvtx2 cuptiNvtxInitialize2 not found\n");
      return 0;
    }
    const int result = initialize(get_export_table);
    g_chained_push = reinterpret_cast<nvtxRangePushA_impl_fntype>(*slot);
    char line[128];
    std::snprintf(line, sizeof(line),
                  "InitializeInjectionNvtx2 cuptiNvtxInitialize2 returned %d, CUPTI handler %s\n",
                  result, g_chained_push != nullptr ? "installed" : "absent");
    Log(line);
  }
  *slot = reinterpret_cast<NvtxFunctionPointer>(&CountingRangePushA);
  return 1;
}

PROBE_EXPORT unsigned long long probe_injection_push_count(void) {
  return g_wrapped_pushes.load(std::memory_order_relaxed);
}
