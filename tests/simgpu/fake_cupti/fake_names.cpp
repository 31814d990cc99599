#include "fake_names.h"

#include <cupti.h>

#include <algorithm>
#include <iterator>

namespace gpuattr::simgpu {
namespace {

struct NameEntry {
  uint32_t id;
  const char* name;
};
#include "simgpu_cupti_names.inc"

template <size_t N>
constexpr bool SortedById(const NameEntry (&table)[N]) {
  for (size_t i = 1; i < N; ++i) {
    if (table[i - 1].id >= table[i].id) return false;
  }
  return true;
}
// The headers list ids in increasing order; FindName's binary search relies on it (the launch
// path looks up two names per callback, so a linear scan of ~900 entries would dominate it).
static_assert(SortedById(kRuntimeNames) && SortedById(kDriverNames) && SortedById(kResultNames));

template <size_t N>
const char* FindName(const NameEntry (&table)[N], uint32_t id) {
  const NameEntry* entry =
      std::lower_bound(std::begin(table), std::end(table), id,
                       [](const NameEntry& e, uint32_t wanted) { return e.id < wanted; });
  return entry != std::end(table) && entry->id == id ? entry->name : nullptr;
}

}  // namespace

bool IsLaunchCbid(int domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        return true;
      default:
        return false;
    }
  }
  return false;
}

uint32_t NestedDriverCbid(uint32_t runtime_cbid) {
  switch (runtime_cbid) {
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
      return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      return CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags;
    default:
      return 0;
  }
}

const char* FunctionName(int domain, uint32_t cbid) {
  const char* name = CallbackName(domain, cbid);
  return name != nullptr ? name : "<unknown>";
}

const char* CallbackName(int domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return FindName(kRuntimeNames, cbid);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return FindName(kDriverNames, cbid);
  return nullptr;
}

const char* ResultName(uint32_t result) { return FindName(kResultNames, result); }

}  // namespace gpuattr::simgpu
