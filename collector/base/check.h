// GPUATTR_CHECK and GPUATTR_DCHECK: programmer invariants of the collector (Perfetto's rule).
//
// A broken invariant is a bug of ours: the collector stops at once, writing the condition, file
// and line to stderr and aborting, rather than go on with state it can no longer trust.
// GPUATTR_DCHECK is checked in debug builds only (NDEBUG unset); its condition is not evaluated
// otherwise, so it may cost what it likes.
//
// Never on input: malformed wire data, files and flags are a Status (status.h), counted and
// reported. And never in the shim: nothing in inject/ may abort its host process (exemplars §9.6).
#ifndef GPUATTR_COLLECTOR_BASE_CHECK_H_
#define GPUATTR_COLLECTOR_BASE_CHECK_H_

namespace gpuattr::internal {

// Writes "gpuattr: GPUATTR_CHECK failed: <condition> (<file>:<line>)" to stderr and aborts.
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);

}  // namespace gpuattr::internal

#define GPUATTR_CHECK(condition)                                        \
  do {                                                                  \
    if (!(condition)) {                                                 \
      ::gpuattr::internal::CheckFailed(#condition, __FILE__, __LINE__); \
    }                                                                   \
  } while (false)

#ifdef NDEBUG
#define GPUATTR_DCHECK(condition) \
  do {                            \
  } while (false && (condition))
#else
#define GPUATTR_DCHECK(condition) GPUATTR_CHECK(condition)
#endif

#endif  // GPUATTR_COLLECTOR_BASE_CHECK_H_
