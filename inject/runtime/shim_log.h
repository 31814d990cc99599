// Diagnostics of the shim on stderr, for humans debugging a traced process.
//
// Off unless GPUATTR_LOG=1 (read once, when the session starts). Each line is prefixed
// "[gpuattr]" and written with one write(2) on fd 2, never on stdout. At most kMaxLogLines lines
// per process image are written; later ones are counted and dropped, so a misbehaving shim cannot
// flood the application's stderr. Never called on the app-thread hot path (NVTX handlers, launch
// callbacks): only from setup, teardown and the gpuattr-flush thread.
#ifndef GPUATTR_INJECT_RUNTIME_SHIM_LOG_H_
#define GPUATTR_INJECT_RUNTIME_SHIM_LOG_H_

namespace gpuattr::inject {

constexpr int kMaxLogLines = 64;

// Reads GPUATTR_LOG. Runs on: whichever thread starts the session.
void InitShimLog() noexcept;

// Enables or disables logging directly (tests).
void SetShimLogEnabled(bool enabled) noexcept;

// printf-style; the line is truncated to 512 bytes.
void ShimLog(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_SHIM_LOG_H_
