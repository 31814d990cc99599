// gpuattr wire protocol, version 1: the records the shim (libgpuattr_inject.so, inside the traced
// process) streams to the collector over a Unix SOCK_SEQPACKET socket. Prose spec: PROTOCOL.md.
//
// This header is the ABI between two processes that may be built apart. It is header-only and uses
// the C++ standard library alone, so both the shim and the collector (and fuzzers) include it.
//
//   connection := message*            one connection per traced process (a fork reconnects)
//   message    := MessageHeader record*          one sendmsg() each, at most kMaxMessageBytes
//   record     := RecordHeader body [padding]    size includes the header, multiple of 8
//
//   +-------------- MessageHeader (24 B) ---------------+---- record ----+---- record ----+
//   | magic | version | header_bytes | sequence | payload_bytes | count | hdr | body | pad | ...
//   +---------------------------------------------------+----------------+----------------+
//
// Invariants the sender keeps and the receiver checks (never trusts):
//  - every integer is explicitly sized and little-endian; no size_t, bool or pointer appears;
//  - the first message of a connection starts with a Hello record;
//  - a message's payload_bytes equals the bytes received after its header, and the record sizes
//    add up to it exactly; a record's size is >= 8, a multiple of 8, and within the payload;
//  - a record whose type the receiver does not know is skipped by its size (forward compatible);
//    a known record shorter than its body is malformed;
//  - sequence numbers grow by one per message the sender built, sent or dropped, so a gap is a
//    count of lost messages; counters in Diagnostics are cumulative, so a later one supersedes;
//  - interned ids (strings, path nodes) are per connection; id 0 means "none"; a definition is
//    sent before the first message that refers to it (the shim drains its rings before it scans
//    its intern tables), but a receiver must still tolerate an unknown id;
//  - every timestamp is CLOCK_MONOTONIC nanoseconds (the shim registers it as CUPTI's clock).
#ifndef GPUATTR_SCHEMAS_WIRE_PROTOCOL_H_
#define GPUATTR_SCHEMAS_WIRE_PROTOCOL_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gpuattr::wire {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian and is copied without byte swapping");

constexpr uint16_t kProtocolVersion = 1;
constexpr uint32_t kMessageMagic = 0x54415047;  // "GPAT" read as little-endian bytes
constexpr char kHelloMagic[8] = {'G', 'P', 'U', 'A', 'T', 'T', 'R', '1'};

// One message is one SOCK_SEQPACKET datagram. Kept well under the default socket buffer
// (net.core.wmem_default, 208 KiB) so a healthy collector never sees EMSGSIZE.
constexpr uint32_t kMaxMessageBytes = 64 * 1024;
// Longest string a String record may carry; longer names are truncated by the sender.
constexpr uint32_t kMaxStringBytes = 4096;

struct MessageHeader {
  uint32_t magic;          // kMessageMagic
  uint16_t version;        // kProtocolVersion
  uint16_t header_bytes;   // sizeof(MessageHeader); lets a later version grow the header
  uint64_t sequence;       // 0 for the first message of a connection
  uint32_t payload_bytes;  // bytes of records after the header
  uint32_t record_count;   // records in the payload
};
static_assert(sizeof(MessageHeader) == 24);

enum class RecordType : uint16_t {
  kHello = 1,       // first record of a connection: who is talking
  kString = 2,      // interned string definition
  kPathNode = 3,    // interned NVTX path node definition (a prefix tree)
  kThreadName = 4,  // nvtxNameOsThread or the OS thread name
  kRangePush = 5,   // push/pop ranges: the per-thread stack
  kRangePop = 6,
  kRangeStart = 7,  // start/end ranges: process-wide, may cross threads
  kRangeEnd = 8,
  kMark = 9,       // instantaneous NVTX marker
  kApiEnter = 10,  // a launch-like CUDA API entered (CUPTI callback ENTER)
  kApiExit = 11,   // the same call returned (CUPTI callback EXIT)
  kKernel = 12,    // device activity records, translated from CUPTI
  kMemcpy = 13,
  kMemset = 14,
  kGraphNodeCreated = 15,  // CUPTI resource callbacks for CUDA graphs
  kGraphNodeCloned = 16,
  kCuptiState = 17,   // outcome of subscribing to CUPTI
  kRefusal = 18,      // a typed reason why some data cannot be collected
  kDiagnostics = 19,  // cumulative loss counters
  kDevice = 20,       // device id -> name
  kGoodbye = 21,      // orderly end of the process's stream
  // Attach (docs/attach.md). Control flows collector -> shim on the same connection.
  kControl = 22,        // collector -> shim: open or close a capture window (armed mode)
  kWindowBegin = 23,    // shim -> collector: a capture window's stream begins
  kWindowEnd = 24,      // shim -> collector: it ends, with the detach outcome
  kAttachRequest = 25,  // `gpuattr attach` -> daemon
  kAttachReply = 26,    // daemon -> `gpuattr attach`
  kValueMark = 27,      // an NVTX mark with an unsigned integer payload, on its thread's path
};

struct RecordHeader {
  uint16_t type;   // RecordType
  uint16_t flags;  // per-type; 0 unless documented
  uint32_t size;   // bytes including this header and padding; multiple of 8
};
static_assert(sizeof(RecordHeader) == 8);

// ---- Bodies. Each follows a RecordHeader. --------------------------------------------------

// What a connection's stream is (docs/attach.md).
enum class HelloMode : uint32_t {
  kTraced = 0,  // traced from the start; the whole life of the process follows (gpuattr run)
  kArmed = 1,   // registered with a daemon, recording nothing until a window opens
  kWindow = 2,  // a capture window's stream begins: a fresh logical stream (ids and sequence
                // numbers restart), WindowBegin follows, WindowEnd closes it; the connection
                // goes back to armed afterwards and may carry further windows
};

struct Hello {
  char magic[8];              // kHelloMagic
  uint32_t protocol_version;  // kProtocolVersion
  uint32_t shim_version;      // major << 16 | minor << 8 | patch
  uint32_t pid;
  uint32_t ppid;
  int32_t rank;           // from RANK, -1 when unset or not a number
  int32_t local_rank;     // from LOCAL_RANK, -1 when unset
  uint64_t monotonic_ns;  // a clock pair taken together, to place the stream in wall time
  uint64_t realtime_ns;
  uint32_t exe_string;  // String id of the executable path (defined in the same message)
  uint32_t mode;        // HelloMode (0 in every shim before attach existed)
};
static_assert(sizeof(Hello) == 56);

// Followed by `length` bytes of UTF-8 (not NUL-terminated) and zero padding to a multiple of 8.
struct String {
  uint32_t id;      // > 0
  uint32_t length;  // <= kMaxStringBytes
};
static_assert(sizeof(String) == 8);

// A node of the interned path tree: the stack [.., parent's name, name]. Node 0 is the root,
// "no range open", and is never defined on the wire.
struct PathNode {
  uint32_t id;             // > 0
  uint32_t parent;         // 0 for a top-level range
  uint32_t name_string;    // the range's message
  uint32_t domain_string;  // 0 for NVTX's default domain
};
static_assert(sizeof(PathNode) == 16);

struct ThreadName {
  uint32_t tid;  // OS thread id (gettid)
  uint32_t name_string;
};
static_assert(sizeof(ThreadName) == 8);

// RangePush: `node` is the thread's path after the push. RangePop: `node` is the path of the
// range that closed, as it was pushed. A pop with an empty stack is not sent.
struct RangeEvent {
  uint64_t timestamp_ns;
  uint32_t tid;
  uint32_t node;
};
static_assert(sizeof(RangeEvent) == 16);

struct RangeStart {
  uint64_t timestamp_ns;
  uint64_t range_id;  // the nvtxRangeId_t the shim handed out; unique per process
  uint32_t tid;
  uint32_t name_string;
  uint32_t domain_string;
  uint32_t reserved;
};
static_assert(sizeof(RangeStart) == 32);

struct RangeEnd {
  uint64_t timestamp_ns;
  uint64_t range_id;
  uint32_t tid;
  uint32_t reserved;
};
static_assert(sizeof(RangeEnd) == 24);

struct Mark {
  uint64_t timestamp_ns;
  uint32_t tid;
  uint32_t name_string;
  uint32_t domain_string;
  uint32_t reserved;
};
static_assert(sizeof(Mark) == 24);

// A mark whose event attributes carry an unsigned integer payload (NVTX_PAYLOAD_TYPE_UNSIGNED_INT64
// or _INT32), sent instead of Mark, with the path node open on its thread: a count that belongs to
// the pass it was made in (the PyTorch annotator's FLOPs and bytes, docs/pytorch.md §FLOPs).
struct ValueMark {
  uint64_t timestamp_ns;
  uint32_t tid;
  uint32_t name_string;
  uint32_t domain_string;
  uint32_t node;  // the thread's path node; 0: no range open
  uint64_t value;
};
static_assert(sizeof(ValueMark) == 32);

enum class ApiDomain : uint8_t { kRuntime = 1, kDriver = 2 };

// What a launch-like API call puts on the device.
enum class ApiKind : uint8_t {
  kKernel = 1,  // one kernel
  kGraph = 2,   // a graph launch: N activities share its correlation id
  kMemcpy = 3,
  kMemset = 4,
  kCapture = 5,  // begin/end of stream capture: bookkeeping, no device work
};

// Flags on kApiEnter. Bit 0 is reserved and never sent: the shim follows driver calls nested in
// a traced runtime call itself (they share its correlation id) and records none of them; a
// receiver ignores the flag (a second ApiEnter of an id in flight is not a second launch).
constexpr uint16_t kApiFlagNested = 1u << 0;

struct ApiEnter {
  uint64_t timestamp_ns;    // host time the API was entered
  uint32_t correlation_id;  // CUPTI correlation id; joins to device records
  uint32_t tid;
  uint32_t node;   // the launching thread's path node at entry (0: no range open)
  uint16_t cbid;   // CUPTI callback id within `domain`
  uint8_t domain;  // ApiDomain
  uint8_t kind;    // ApiKind
};
static_assert(sizeof(ApiEnter) == 24);

struct ApiExit {
  uint64_t timestamp_ns;
  uint32_t correlation_id;
  uint32_t tid;
};
static_assert(sizeof(ApiExit) == 16);

// Device activity. [start_ns, end_ns) on the shim's clock; both 0 when CUPTI had no timestamp
// (an incomplete record at a forced flush, or a device-buffer overflow).
struct Kernel {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t graph_node_id;   // 0 when not launched through a graph
  uint32_t correlation_id;  // 0: unknown (an internal launch)
  uint32_t name_string;     // mangled name
  uint32_t device;
  uint32_t stream;
  uint32_t context;
  uint32_t graph_id;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_memory_bytes;  // static + dynamic
  uint32_t registers_per_thread;
};
static_assert(sizeof(Kernel) == 80);

struct Memcpy {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint64_t graph_node_id;
  uint32_t correlation_id;
  uint32_t device;
  uint32_t stream;
  uint32_t context;
  uint32_t graph_id;
  uint32_t src_device;  // peer copies (CUPTI MEMCPY2); equal to device otherwise
  uint32_t dst_device;
  uint8_t copy_kind;  // CUpti_ActivityMemcpyKind
  uint8_t src_kind;   // CUpti_ActivityMemoryKind
  uint8_t dst_kind;
  uint8_t peer;  // 1 when translated from a MEMCPY2 (peer-to-peer) record
};
static_assert(sizeof(Memcpy) == 64);

struct Memset {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint64_t graph_node_id;
  uint32_t correlation_id;
  uint32_t device;
  uint32_t stream;
  uint32_t context;
  uint32_t graph_id;
  uint32_t value;
};
static_assert(sizeof(Memset) == 56);

// A graph node was created while `correlation_id`'s API ran on `tid` (stream capture, or an
// explicit cudaGraphAdd*Node). `node` is that thread's path node then: the capture-time context.
struct GraphNodeCreated {
  uint64_t timestamp_ns;
  uint64_t graph_node_id;   // cuptiGetGraphNodeId
  uint32_t graph_id;        // cuptiGetGraphId of the owning graph
  uint32_t correlation_id;  // the enclosing API call (0 when none was traced)
  uint32_t tid;
  uint32_t node;
};
static_assert(sizeof(GraphNodeCreated) == 32);

// cudaGraphInstantiate / cudaGraphClone copied `original_graph_node_id` to `graph_node_id`.
struct GraphNodeCloned {
  uint64_t timestamp_ns;
  uint64_t graph_node_id;
  uint64_t original_graph_node_id;
  uint32_t graph_id;
  uint32_t reserved;
};
static_assert(sizeof(GraphNodeCloned) == 32);

// Sent once InitializeInjection has tried to subscribe. result is the CUptiResult of the first
// failing setup call (0: subscribed and enabled).
struct CuptiState {
  int32_t result;
  uint32_t cupti_version;   // cuptiGetVersion, 0 when unknown
  uint32_t library_string;  // the path the shim loaded CUPTI from, 0 when none could be loaded
  uint32_t reserved;
};
static_assert(sizeof(CuptiState) == 16);

// Refusal codes. The collector owns the catalogue of names, causes and remedies; the shim adds
// the concrete cause it saw (a CUPTI result, the name of the tool holding the subscriber slot).
enum class RefusalCode : uint32_t {
  kCuptiUnavailable = 1,         // libcupti missing, or a setup call failed (999 without driver)
  kCuptiSubscriberConflict = 2,  // another tool holds the single CUPTI subscriber slot
  kCuptiFatalError = 3,          // CUPTI reported a fatal error and finalized itself
  kDriverMissing = 4,            // a CUDA runtime is loaded, but no CUDA driver (libcuda.so.1)
};

struct Refusal {
  uint32_t code;          // RefusalCode
  int32_t cupti_result;   // the CUptiResult behind it, 0 when not applicable
  uint32_t cause_string;  // what the shim saw, in words
  uint32_t reserved;
};
static_assert(sizeof(Refusal) == 16);

// Cumulative since the connection began; the latest received supersedes earlier ones.
struct Diagnostics {
  uint64_t ring_dropped_records;    // a thread's ring was full
  uint64_t socket_dropped_records;  // records in messages the socket would not take
  uint64_t socket_dropped_messages;
  uint64_t cupti_dropped_records;   // cuptiActivityGetNumDroppedRecords, summed
  uint64_t cupti_buffers_declined;  // bufferRequested found no free buffer
  uint64_t intern_table_full;       // strings or path nodes that could not be interned
  uint64_t untranslated_records;    // CUPTI records of kinds the shim does not translate
  uint64_t incomplete_records;      // CUPTI records with start = end = 0
};
static_assert(sizeof(Diagnostics) == 64);

struct Device {
  uint32_t device;
  uint32_t name_string;
};
static_assert(sizeof(Device) == 8);

enum class GoodbyeReason : uint32_t { kExit = 1 };

struct Goodbye {
  uint64_t timestamp_ns;
  uint32_t reason;  // GoodbyeReason
  uint32_t reserved;
};
static_assert(sizeof(Goodbye) == 16);

// ---- Attach (docs/attach.md) -------------------------------------------------------------

// RangePush flag: a range that was already open when the window began, reported at the
// thread's first event in the window with the window's begin time (its real start is before
// the window). It is part of the thread's stack but not an instance in the window.
constexpr uint16_t kRangeFlagOpenBeforeWindow = 1u << 0;

enum class ControlCommand : uint32_t {
  kOpenWindow = 1,   // start recording (subscribing CUPTI if needed)
  kCloseWindow = 2,  // stop recording, flush, detach CUPTI (cupti-notes §5)
};

// How a window opened by kOpenWindow begins and ends on the shim's side.
enum class WindowTrigger : uint32_t {
  kNow = 1,    // begins at once; ends at kCloseWindow
  kSteps = 2,  // begins at the next push of a top-level step range (matched by the shim, see
               // docs/attach.md); ends after `steps` of them have popped, or at kCloseWindow
};

struct Control {
  uint32_t command;           // ControlCommand
  uint32_t window_id;         // chosen by the collector, echoed in WindowBegin/WindowEnd
  uint32_t trigger;           // WindowTrigger (kOpenWindow only)
  uint32_t steps;             // kSteps: how many step ranges the window covers
  uint32_t step_name_string;  // kSteps: exact top-level range name; 0: the built-in step names
  uint32_t reserved;
};
static_assert(sizeof(Control) == 24);

struct WindowBegin {
  uint64_t timestamp_ns;  // recording began (the step range's push for kSteps)
  uint32_t window_id;
  uint32_t cupti_attached;  // 1: CUPTI subscribed for the window; 0: refused (a Refusal follows)
  uint64_t attach_ns;       // time the shim spent subscribing CUPTI for this window
};
static_assert(sizeof(WindowBegin) == 24);

// WindowBegin's record flags (docs/attach.md §Injection). kWindowBeginFlagLateAttach: the shim was
// loaded into the running process by `gpuattr attach` (not at its start), so NVTX was never
// injected, CUPTI was subscribed after cuInit and graphs instantiated before were never seen.
// kWindowBeginFlagTorchLoaded (only with it): torch's Python bindings are loaded, but the PyTorch
// annotator, which starts with the interpreter, is not running.
constexpr uint16_t kWindowBeginFlagLateAttach = 1u << 0;
constexpr uint16_t kWindowBeginFlagTorchLoaded = 1u << 1;

enum class DetachOutcome : uint32_t {
  kFinalized = 1,    // cuptiFinalize ran at a CUDA API exit (cupti-notes §5)
  kPending = 2,      // no CUDA API call came in time: recording stopped, CUPTI finalizes at the
                     // process's next API exit; the window's data is complete either way
  kNotAttached = 3,  // CUPTI was never subscribed for this window
  kProcessExit = 4,  // the process exited inside the window
};

enum class WindowEndReason : uint32_t {
  kClosed = 1,       // kCloseWindow arrived
  kStepsDone = 2,    // the requested number of step ranges popped
  kProcessExit = 3,  // the process is exiting
};

struct WindowEnd {
  uint64_t timestamp_ns;  // recording stopped
  uint32_t window_id;
  uint32_t reason;      // WindowEndReason
  uint32_t detach;      // DetachOutcome
  uint32_t steps_seen;  // step ranges closed inside the window (kSteps)
  uint64_t detach_ns;   // from the stop to cuptiFinalize's return, 0 unless kFinalized
};
static_assert(sizeof(WindowEnd) == 32);

enum class AttachSelector : uint32_t { kPid = 1, kAll = 2, kRank = 3 };

// The first and only record of an attach client's first message. The daemon answers with one
// AttachReply message when every selected window has ended (or at once, for a refusal).
struct AttachRequest {
  uint32_t selector;          // AttachSelector
  int32_t value;              // pid or rank; unused for kAll
  uint64_t duration_ns;       // > 0: close the windows after this long
  uint32_t steps;             // > 0: WindowTrigger::kSteps with this many steps
  uint32_t step_name_string;  // kSteps: the step range's name (String in the same message), 0: auto
};
static_assert(sizeof(AttachRequest) == 24);

enum class AttachStatus : uint32_t {
  kDone = 1,          // the report is written; report_path_string names it
  kRequiresShim = 2,  // no selected process is registered (armed) with this daemon
  kBusy = 3,          // a selected process already has a window open
  kFailed = 4,        // message_string says why
};

// Followed in the same message by the String records it names.
struct AttachReply {
  uint32_t status;              // AttachStatus
  uint32_t processes;           // windows in the report
  uint32_t report_path_string;  // the report the daemon wrote into its reports directory
  uint32_t message_string;      // in words, for the user
};
static_assert(sizeof(AttachReply) == 16);

// ---- Compile-time table: body type <-> record type. -----------------------------------------

template <typename Body>
struct RecordTypeOf;
#define GPUATTR_WIRE_BODY(BodyType, Tag)                                                         \
  template <>                                                                                    \
  struct RecordTypeOf<BodyType> {                                                                \
    static constexpr RecordType kType = RecordType::Tag;                                         \
  };                                                                                             \
  static_assert(std::is_trivially_copyable_v<BodyType> && std::is_standard_layout_v<BodyType> && \
                    alignof(BodyType) <= 8,                                                      \
                #BodyType " must be a plain, explicitly sized wire struct")
GPUATTR_WIRE_BODY(Hello, kHello);
GPUATTR_WIRE_BODY(String, kString);
GPUATTR_WIRE_BODY(PathNode, kPathNode);
GPUATTR_WIRE_BODY(ThreadName, kThreadName);
GPUATTR_WIRE_BODY(RangeStart, kRangeStart);
GPUATTR_WIRE_BODY(RangeEnd, kRangeEnd);
GPUATTR_WIRE_BODY(Mark, kMark);
GPUATTR_WIRE_BODY(ValueMark, kValueMark);
GPUATTR_WIRE_BODY(ApiEnter, kApiEnter);
GPUATTR_WIRE_BODY(ApiExit, kApiExit);
GPUATTR_WIRE_BODY(Kernel, kKernel);
GPUATTR_WIRE_BODY(Memcpy, kMemcpy);
GPUATTR_WIRE_BODY(Memset, kMemset);
GPUATTR_WIRE_BODY(GraphNodeCreated, kGraphNodeCreated);
GPUATTR_WIRE_BODY(GraphNodeCloned, kGraphNodeCloned);
GPUATTR_WIRE_BODY(CuptiState, kCuptiState);
GPUATTR_WIRE_BODY(Refusal, kRefusal);
GPUATTR_WIRE_BODY(Diagnostics, kDiagnostics);
GPUATTR_WIRE_BODY(Device, kDevice);
GPUATTR_WIRE_BODY(Goodbye, kGoodbye);
GPUATTR_WIRE_BODY(Control, kControl);
GPUATTR_WIRE_BODY(WindowBegin, kWindowBegin);
GPUATTR_WIRE_BODY(WindowEnd, kWindowEnd);
GPUATTR_WIRE_BODY(AttachRequest, kAttachRequest);
GPUATTR_WIRE_BODY(AttachReply, kAttachReply);
#undef GPUATTR_WIRE_BODY
// RangeEvent serves two types (kRangePush, kRangePop), so it is named at each use.
static_assert(std::is_trivially_copyable_v<RangeEvent>);

// The smallest body a known record type may carry; 0 for unknown types (skipped by size).
constexpr uint32_t MinBodyBytes(RecordType type) {
  switch (type) {
    case RecordType::kHello:
      return sizeof(Hello);
    case RecordType::kString:
      return sizeof(String);
    case RecordType::kPathNode:
      return sizeof(PathNode);
    case RecordType::kThreadName:
      return sizeof(ThreadName);
    case RecordType::kRangePush:
    case RecordType::kRangePop:
      return sizeof(RangeEvent);
    case RecordType::kRangeStart:
      return sizeof(RangeStart);
    case RecordType::kRangeEnd:
      return sizeof(RangeEnd);
    case RecordType::kMark:
      return sizeof(Mark);
    case RecordType::kValueMark:
      return sizeof(ValueMark);
    case RecordType::kApiEnter:
      return sizeof(ApiEnter);
    case RecordType::kApiExit:
      return sizeof(ApiExit);
    case RecordType::kKernel:
      return sizeof(Kernel);
    case RecordType::kMemcpy:
      return sizeof(Memcpy);
    case RecordType::kMemset:
      return sizeof(Memset);
    case RecordType::kGraphNodeCreated:
      return sizeof(GraphNodeCreated);
    case RecordType::kGraphNodeCloned:
      return sizeof(GraphNodeCloned);
    case RecordType::kCuptiState:
      return sizeof(CuptiState);
    case RecordType::kRefusal:
      return sizeof(Refusal);
    case RecordType::kDiagnostics:
      return sizeof(Diagnostics);
    case RecordType::kDevice:
      return sizeof(Device);
    case RecordType::kGoodbye:
      return sizeof(Goodbye);
    case RecordType::kControl:
      return sizeof(Control);
    case RecordType::kWindowBegin:
      return sizeof(WindowBegin);
    case RecordType::kWindowEnd:
      return sizeof(WindowEnd);
    case RecordType::kAttachRequest:
      return sizeof(AttachRequest);
    case RecordType::kAttachReply:
      return sizeof(AttachReply);
  }
  return 0;
}

constexpr uint32_t PaddedRecordBytes(uint32_t body_bytes) {
  return (static_cast<uint32_t>(sizeof(RecordHeader)) + body_bytes + 7u) & ~7u;
}

}  // namespace gpuattr::wire

#endif  // GPUATTR_SCHEMAS_WIRE_PROTOCOL_H_
