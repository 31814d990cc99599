/* simgpu_control.h: the test-control API that only the fake libcupti.so.13 exports.
 *
 * The simulated CUDA driver (tests/simgpu/sim/, linked into simgpu-run) is the only intended
 * caller: it plays the part the real driver plays towards the real CUPTI. It binds these functions
 * with dlsym() on the library named by GPUATTR_CUPTI_LIBRARY; when they are absent (the real
 * libcupti), the simulation runs without CUPTI. Tests may call them too, through dlopen like any
 * client.
 *
 * Threads: every function may be called from any application thread, concurrently. An API call is
 * a per-thread bracket: simgpu_api_enter() fires the ENTER callbacks on the calling thread and
 * pushes the call on that thread's stack of open calls; simgpu_api_exit() fires the EXIT callbacks
 * of the innermost open call of the same thread and pops it. Resource events (graph node created,
 * instantiate) fire their callbacks inside the innermost open call of the calling thread.
 *
 * Time: the simulated device runs on CLOCK_MONOTONIC (the device clock; simulated time replaces
 * it, simgpu_set_device_clock): the times of SimgpuActivity are device-clock ns. Records are
 * stamped on the CUPTI clock, simgpu_now() (the registered timestamp callback when there is one,
 * CLOCK_REALTIME otherwise, like the real CUPTI on Linux x86-64), at the moment they are stamped:
 * API records at ENTER and EXIT, device records when the fake delivers them (their device times
 * moved by the offset between the CUPTI clock and the device clock then; 0 when the two agree
 * within 1 ms). So a client that registers the device clock sees the device times exactly, and one
 * that registers it late, or loses it to cuptiFinalize, never shifts the device timeline.
 *
 * All symbols sit in the libcupti.so.13 version node, like the CUPTI ones.
 */
#ifndef GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_SIMGPU_CONTROL_H_
#define GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_SIMGPU_CONTROL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a signature or the meaning of an argument below changes; the simulated driver
 * refuses a mismatch. */
#define SIMGPU_CONTROL_VERSION 3

/* The simulated machine: device ordinals 0 .. SIMGPU_DEVICE_COUNT - 1 (what scenarios may name),
 * all of one kind, named so by the fake's device records and the driver API simgpu-run exports. */
#define SIMGPU_DEVICE_COUNT 64
#define SIMGPU_DEVICE_NAME "simgpu simulated device"

/* What a device activity is. */
typedef enum {
  SIMGPU_ACTIVITY_KERNEL = 1,
  SIMGPU_ACTIVITY_MEMCPY = 2,
  SIMGPU_ACTIVITY_MEMSET = 3
} SimgpuActivityType;

/* One unit of device work, described by the simulated device once it has been scheduled. The fake
 * writes it as a CUpti_ActivityKernel10 / Memcpy6 / MemcpyPtoP4 / Memset4 record from its worker
 * thread, if its kind is enabled when it is submitted; the timestamps (the device clock here,
 * converted at delivery, see Time above) become visible in the record only once the device clock
 * >= end_ns (until then the record is incomplete, and a forced flush delivers it with
 * start = end = 0). */
typedef struct {
  SimgpuActivityType type;
  uint32_t correlation_id; /* of the API call that launched it (the graph launch for nodes) */
  uint32_t device;
  uint32_t stream;
  uint64_t start_ns; /* the device clock */
  uint64_t end_ns;   /* the device clock */
  const char* name;  /* kernels: mangled name; copied (interned) by the fake */
  int32_t grid[3];
  int32_t block[3];
  int32_t static_shared_memory;
  int32_t dynamic_shared_memory;
  uint16_t registers_per_thread;
  uint64_t bytes;    /* memcpy/memset */
  uint8_t copy_kind; /* memcpy: CUpti_ActivityMemcpyKind; PTOP gives a MEMCPY2 record */
  uint8_t src_kind;  /* memcpy: CUpti_ActivityMemoryKind */
  uint8_t dst_kind;
  uint32_t peer_device; /* memcpy PTOP: the other device */
  uint32_t memset_value;
  uint32_t graph_id;      /* 0 unless launched by a graph */
  uint64_t graph_node_id; /* 0 unless launched by a graph: the exec's clone node id */
} SimgpuActivity;

/* SIMGPU_CONTROL_VERSION of the library (2: SimgpuActivity times are CLOCK_MONOTONIC; 3: they are
 * on the device clock, which simgpu_set_device_clock may replace). */
int simgpu_control_version(void);

/* Replaces CLOCK_MONOTONIC as the device clock with `now` (the simulated driver's simulated time,
 * sim/sim_clock.h): SimgpuActivity times, when a record is complete and the conversion to the
 * CUPTI clock all read it. Called once, before any work is submitted; NULL goes back to
 * CLOCK_MONOTONIC. */
void simgpu_set_device_clock(uint64_t (*now)(void));

/* The CUPTI clock, in ns. */
uint64_t simgpu_now(void);

/* Begins an API call on the calling thread: takes the next correlation id, fires the ENTER
 * callback of (domain, cbid) and, for runtime calls that the driver implements (launch, memcpy,
 * memset, sync, graph and capture calls), the nested driver ENTER. The first call of the process
 * on a device also fires CONTEXT_CREATED inside it. `symbol` is the kernel name for launch CBIDs
 * (NULL otherwise); `stream` and `device` say where the work goes. Returns the correlation id. */
uint32_t simgpu_api_enter(int domain, uint32_t cbid, const char* symbol, uint32_t device,
                          uint32_t stream);

/* Ends the innermost open API call of the calling thread: nested driver EXIT, then EXIT, then
 * the API activity records (kinds RUNTIME/DRIVER, when enabled) into the thread's buffer.
 * `return_value` is what functionReturnValue points to at EXIT. No-op when nothing is open. */
void simgpu_api_exit(int return_value);

/* Submits device work (see SimgpuActivity). Returns 0, or -1 for an unknown type. */
int simgpu_activity_submit(const SimgpuActivity* activity);

/* Creates a graph (fires GRAPH_CREATED inside the innermost open call). Returns its graph id. */
uint32_t simgpu_graph_create(void);

/* Adds a node of CUgraphNodeType `node_type` to graph `graph_id`, firing GRAPHNODE_CREATED
 * (CUpti_GraphData{graph, node, nodeType}) inside the innermost open call of the calling thread.
 * Returns the node id, 0 for an unknown graph. */
uint64_t simgpu_graph_node_create(uint32_t graph_id, int node_type);

/* Instantiates graph `graph_id`: creates the executable and its clone graph, and for each node,
 * in creation order, fires GRAPHNODE_CREATED then GRAPHNODE_CLONED (originalNode -> node) and then
 * GRAPHEXEC_CREATED, inside the innermost open call. Writes up to `max_nodes` clone node ids (in
 * the order of the original nodes) and the clone graph's id. Returns the exec id, 0 for an unknown
 * graph. */
uint32_t simgpu_graph_instantiate(uint32_t graph_id, uint32_t* clone_graph_id,
                                  uint64_t* clone_node_ids, size_t max_nodes);

#ifdef __cplusplus
}
#endif

#endif /* GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_SIMGPU_CONTROL_H_ */
