#include "cupti/cupti_v2.h"

#include <dlfcn.h>

namespace gpuattr::inject {
namespace {

template <typename Function>
bool Bind(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  return *function != nullptr;
}

}  // namespace

bool BindCuptiV2(void* library, CuptiV2Api* api) noexcept {
  CuptiV2Api bound;
  const bool complete =
      library != nullptr && Bind(library, "cuptiSubscribe_v2", &bound.subscribe) &&
      Bind(library, "cuptiActivityEnable_v2", &bound.enable) &&
      Bind(library, "cuptiActivityDisable_v2", &bound.disable) &&
      Bind(library, "cuptiActivityRegisterCallbacks_v2", &bound.register_callbacks) &&
      Bind(library, "cuptiActivityGetNextRecord_v2", &bound.get_next_record) &&
      Bind(library, "cuptiGetTimestamp_v2", &bound.get_timestamp) &&
      Bind(library, "cuptiActivitySetAttribute_v2", &bound.set_attribute) &&
      Bind(library, "cuptiActivityGetNumDroppedRecords_v2", &bound.get_num_dropped_records);
  if (complete) *api = bound;
  return complete;
}

}  // namespace gpuattr::inject
