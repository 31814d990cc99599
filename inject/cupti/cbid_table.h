// The CUPTI callback ids the shim enables, one by one (never whole domains: those would also hit
// hot calls such as cudaGetDevice), and what each one means for the wire.
//
// The lists were generated from the CUDA 13.0 headers by enum name (cupti-notes §3.2 and
// Appendix A), so a CBID renamed or removed in a later header fails to compile instead of silently
// enabling the wrong call:
//   grep -oE "CUPTI_(RUNTIME|DRIVER)_TRACE_CBID_[A-Za-z0-9_]*" cupti_{runtime,driver}_cbid.h
// filtered by prefix: kernel launches (incl. nvcc 13's __cudaLaunchKernel 505/506), graph
// launches, every cudaMemcpy*/cudaMemset*/cuMemcpy*/cuMemset*, stream capture begin/end, and graph
// instantiate/clone (tracked only, to skip the GRAPHNODE_CREATED callbacks they cause).
//
// Pure data; read from any thread.
#ifndef GPUATTR_INJECT_CUPTI_CBID_TABLE_H_
#define GPUATTR_INJECT_CUPTI_CBID_TABLE_H_

#include <cupti.h>

#include <cstdint>
#include <span>

namespace gpuattr::inject {

enum class CbidRole : uint8_t {
  kNone = 0,    // not enabled
  kKernel,      // wire::ApiKind::kKernel
  kGraph,       // wire::ApiKind::kGraph
  kMemcpy,      // wire::ApiKind::kMemcpy
  kMemset,      // wire::ApiKind::kMemset
  kCapture,     // wire::ApiKind::kCapture
  kGraphSetup,  // instantiate/clone: no wire record, only thread-local tracking
};

struct CbidEntry {
  uint32_t cbid;
  CbidRole role;
};

std::span<const CbidEntry> RuntimeCbids() noexcept;
std::span<const CbidEntry> DriverCbids() noexcept;

// O(1) lookups for the callback hot path; kNone for ids not in the lists.
CbidRole RuntimeRole(uint32_t cbid) noexcept;
CbidRole DriverRole(uint32_t cbid) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_CBID_TABLE_H_
