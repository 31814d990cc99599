// One of three tiny shared libraries for the NVTX stress scenario (issue 8): each carries its own
// copy of the NVTX3 header machinery (hidden symbols), so the NVTX injection is initialised once
// per library, through InitializeInjectionNvtx2, the first time that library calls NVTX.
// Runs on: any app thread, concurrently; holds no state of its own.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) void NvtxLibARun(void (*callback)(void*),
                                                                   void* arg) {
  nvtxRangePushA("lib_a");
  callback(arg);
  nvtxRangePop();
}
