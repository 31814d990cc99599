// Kineto (PyTorch profiler) chrome-trace import: one .json or .json.gz file to an ImportedTrace.
//
// Reads both schemas: today's categories (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
// cuda_driver, cpu_op, user_annotation; ac2g flows) and the 2021 ones (Kernel, Memcpy, Memset,
// Runtime, Operator; async flows; pids and tids may be strings), and the legacy autograd
// profiler's event list (a PyTorch built without Kineto: no categories, pid "CPU functions" or
// "CUDA functions"; format "autograd_legacy"). A pid or tid written as a string of digits is that
// number; any other string is a name with an id of its own, from 2^31 up. What becomes what:
//  - device activity: kernel / memcpy / memset X events; device and stream from args (else the
//    event's pid and tid, Kineto's convention); correlation from args.correlation, else from a
//    flow (ac2g/async, s or f) bound to the event's (pid, tid, ts); kernel grid, block, shared
//    memory and registers from args when present. cuda_sync and gpu_user_annotation are not
//    device work and are skipped;
//  - launches: runtime and driver X events with their correlation id (trace_replay.h decides
//    which launch device work);
//  - host ranges: user_annotation X events and ProfilerStep#N ranges on each thread; with
//    `op_ranges` (--ranges ops) every cpu_op as well; the `nn.Module: …` python_function events
//    (with_modules; unless `modules` is off) and the checkpoint recompute_fn frames (with_stack);
//    then the PyTorch model's ranges (pytorch_model.h), from backward ops, sequence numbers and
//    fwdbwd flows. In the legacy list, which cannot tell
//    annotations from ops, every "CPU functions" event; its "CUDA functions" events are
//    CUDA-event estimates, not device work, and are not used;
//  - device names: deviceProperties [{id, name}].
// Every other well-formed event is counted by category (ImportedTrace::unused_events).
// Times are parsed exactly from the number text (decimal_time.h). An event whose fields have the
// wrong type is skipped and counted (ImportedTrace::skipped_events); text that is not JSON, or
// not a trace, is an error (kDataLoss).
//
// Runs on the main thread; parses one event at a time (json_event_stream.h), so memory is the
// compact per-event structs it keeps plus one event's text.
#ifndef GPUATTR_COLLECTOR_IMPORT_KINETO_IMPORTER_H_
#define GPUATTR_COLLECTOR_IMPORT_KINETO_IMPORTER_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "import/imported_trace.h"
#include "import/json_event_stream.h"

namespace gpuattr::collector {

struct KinetoOptions {
  bool op_ranges = false;  // --ranges ops: cpu_op events are ranges too
  bool modules = true;     // `nn.Module: …` python_function events are ranges (--no-modules)
};

// `path` names the input in messages and in the report. `json_bytes` (optional) receives the
// number of uncompressed JSON bytes read.
StatusOr<ImportedTrace> ImportKineto(ByteSource* source, const std::string& path,
                                     const KinetoOptions& options, uint64_t* json_bytes);

StatusOr<ImportedTrace> ImportKinetoFile(const std::string& path, const KinetoOptions& options,
                                         uint64_t* json_bytes);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_KINETO_IMPORTER_H_
