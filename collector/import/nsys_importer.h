// Nsight Systems import: an `nsys export --type sqlite` database to an ImportedTrace.
//
// Tables read (each optional; a missing table contributes nothing, and columns are discovered
// with PRAGMA table_info so that export schema versions that add, drop or rename optional
// columns still load):
//  - CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET: device activity (start, end, deviceId,
//    streamId, correlationId, globalPid; kernels: demangledName or shortName (StringIds ids),
//    grid, block, static + dynamic shared memory, registersPerThread; bytes, copyKind, value);
//  - CUPTI_ACTIVITY_KIND_RUNTIME and _DRIVER: API calls (start, end, globalTid, correlationId,
//    nameId);
//  - NVTX_EVENTS: eventType 59 (push/pop) are per-thread ranges, 60 (start/end) process-wide
//    spans; the name is `text`, else StringIds[textId]; ranges without an end are skipped;
//  - StringIds(id, value);
//  - TARGET_INFO_GPU: device names (cuDevice, else id; name).
// A database with none of the tables above is not an Nsight export: kDataLoss.
// globalTid / globalPid encode the process as (value >> 24) & 0xFFFFFF and the thread as
// value & 0xFFFFFF. Times are integer nanoseconds already. graphNodeId is not carried over
// (see trace_replay.h).
//
// Runs on the main thread. A file that is not an SQLite database, or a corrupt one, is kDataLoss.
#ifndef GPUATTR_COLLECTOR_IMPORT_NSYS_IMPORTER_H_
#define GPUATTR_COLLECTOR_IMPORT_NSYS_IMPORTER_H_

#include <string>

#include "base/status.h"
#include "import/imported_trace.h"

namespace gpuattr::collector {

inline constexpr int kNsysPushPopRange = 59;
inline constexpr int kNsysStartEndRange = 60;

StatusOr<ImportedTrace> ImportNsysFile(const std::string& path);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_NSYS_IMPORTER_H_
