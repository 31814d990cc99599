// A CUPTI client linked against libcupti that the process loads after the shim redirected CUPTI's
// exports (cupti_mux_test.cpp): its relocations are resolved then, by the loader's own lookup.
#include <cupti.h>

extern "C" __attribute__((visibility("default"))) void* LateClientSubscribeAddress() {
  return reinterpret_cast<void*>(&cuptiSubscribe_v2);
}
