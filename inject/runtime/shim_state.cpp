#include "runtime/shim_state.h"

#include <type_traits>

namespace gpuattr::inject {

static_assert(std::is_trivially_destructible_v<ShimState>,
              "ShimState must outlive static destruction: late callbacks may still use it");

constinit ShimState g_shim;

}  // namespace gpuattr::inject
