// The NVTX side of the shim: InitializeInjectionNvtx2 fills each module's CORE and CORE2
// callback tables with our handlers (cupti-notes §2), and the handlers turn NVTX calls into wire
// records in the calling thread's ring.
//
// Called by: NVTX3's loader, once per ELF module that uses NVTX (possibly several times, from any
// thread, before main); the handlers by any app thread. Tables are reached only through the
// export table; a NULL or too-small table is skipped, never dereferenced.
//
// Semantics:
//   push/pop (A, W, Ex, domain Ex) - one stack per thread, all domains merged in push order (see
//        runtime/thread_state.h); push returns the 0-based level within its domain, pop the level
//        of the range it closed, -1 when that domain has nothing open. Records: RangePush with
//        the path node after the push, RangePop with the node of the range closed.
//   start/end (A, W, Ex, domain Ex) - RangeStart/RangeEnd with an id we mint (process-unique,
//        from 1); not part of the stack.
//   mark (A, W, Ex, domain Ex) - Mark.
//   domain create (A, W) - the handle encodes the interned domain name: one handle per distinct
//        name, stable for the process's life; destroy is a no-op.
//   context domain - push/pop ranges of the domain named kContextDomain ("gpuattr.context") are
//        context: on the thread's stack, so what is pushed or launched above them has their path,
//        but with no RangePush/RangePop of their own (no range, no host instance), and never the
//        start of a steps window. The Python annotator pushes a backward node's module path so
//        (docs/pytorch.md), as the import model's context copies are (docs/attribution.md).
//   register string (A, W) - likewise: the handle encodes the interned string, so a REGISTERED
//        message costs no lookup.
//   NameOsThread (A, W) - ThreadName. nvtxInitialize - nothing to do.
// Messages: ASCII, UNICODE (wchar_t, converted to UTF-8) and REGISTERED; strings longer than
// wire::kMaxStringBytes are truncated; a missing message is name 0.
#ifndef GPUATTR_INJECT_NVTX_NVTX_INJECTION_H_
#define GPUATTR_INJECT_NVTX_NVTX_INJECTION_H_

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace gpuattr::inject {

inline constexpr char kContextDomain[] = "gpuattr.context";

// Installs the handlers into the tables of the module behind `get_export_table`. Returns 1 when
// the CORE table was filled, 0 when the export table is unusable.
int InstallNvtxHandlers(NvtxGetExportTableFunc_t get_export_table) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_NVTX_NVTX_INJECTION_H_
