#include "nvtx/nvtx_injection.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>
#include <string_view>

#include "runtime/clock.h"
#include "runtime/shim_state.h"
#include "wire/protocol.h"

// The handle types NVTX leaves to the tool. A handle is the address of element `id` of an array
// indexed by string id, so decoding a handle is pointer arithmetic and creating one writes
// nothing: no allocation, no lock beyond interning the name.
struct nvtxDomainRegistration_st {
  unsigned char unused;
};
struct nvtxStringRegistration_st {
  unsigned char unused;
};

namespace gpuattr::inject {
namespace {

constexpr int kNotTracking = NVTX_NO_PUSH_POP_TRACKING;
constexpr int kNothingToPop = -1;

nvtxDomainRegistration_st g_domain_handles[StringTable::kMaxEntries + 1];
nvtxStringRegistration_st g_string_handles[StringTable::kMaxEntries + 1];

uint32_t DomainId(nvtxDomainHandle_t domain) noexcept {
  if (domain == nullptr) return 0;
  const std::ptrdiff_t id = domain - g_domain_handles;
  return id > 0 && id <= static_cast<std::ptrdiff_t>(StringTable::kMaxEntries)
             ? static_cast<uint32_t>(id)
             : 0;
}

uint32_t RegisteredId(nvtxStringHandle_t handle) noexcept {
  if (handle == nullptr) return 0;
  const std::ptrdiff_t id = handle - g_string_handles;
  return id > 0 && id <= static_cast<std::ptrdiff_t>(StringTable::kMaxEntries)
             ? static_cast<uint32_t>(id)
             : 0;
}

uint32_t InternAscii(const char* text) noexcept {
  if (text == nullptr) return 0;
  return Shim().strings.Intern(std::string_view(text, strnlen(text, wire::kMaxStringBytes)));
}

// wchar_t (UTF-32 on Linux) to UTF-8, into a stack buffer: no allocation on the hot path.
uint32_t InternWide(const wchar_t* text) noexcept {
  if (text == nullptr) return 0;
  char buffer[wire::kMaxStringBytes];
  size_t used = 0;
  for (; *text != L'\0'; ++text) {
    uint32_t c = static_cast<uint32_t>(*text);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    char encoded[4];
    size_t n;
    if (c < 0x80) {
      encoded[0] = static_cast<char>(c);
      n = 1;
    } else if (c < 0x800) {
      encoded[0] = static_cast<char>(0xC0 | (c >> 6));
      encoded[1] = static_cast<char>(0x80 | (c & 0x3F));
      n = 2;
    } else if (c < 0x10000) {
      encoded[0] = static_cast<char>(0xE0 | (c >> 12));
      encoded[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      encoded[2] = static_cast<char>(0x80 | (c & 0x3F));
      n = 3;
    } else {
      encoded[0] = static_cast<char>(0xF0 | (c >> 18));
      encoded[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      encoded[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      encoded[3] = static_cast<char>(0x80 | (c & 0x3F));
      n = 4;
    }
    if (used + n > sizeof(buffer)) break;  // truncate on a character boundary
    std::memcpy(buffer + used, encoded, n);
    used += n;
  }
  return Shim().strings.Intern(std::string_view(buffer, used));
}

// The message of an event attribute structure, 0 when absent or unreadable.
uint32_t MessageOf(const nvtxEventAttributes_t* attributes) noexcept {
  if (attributes == nullptr || attributes->version == 0) return 0;
  constexpr size_t kNeeded = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (attributes->size < kNeeded) return 0;
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return InternAscii(attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return InternWide(attributes->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return RegisteredId(attributes->message.registered);
    default:
      return 0;
  }
}

// Runs on: app thread inside an NVTX push. Armed between windows it only keeps the frame, with
// its path left to be interned when a window begins (CaptureWindow::SyncThread): no clock read,
// no intern lookup, no record.
int Push(uint32_t domain, uint32_t name) noexcept {
  const EventMode mode = CurrentEventMode();
  if (mode == EventMode::kIgnore) return kNotTracking;
  ThreadState* t = CurrentThread();
  if (t == nullptr) return kNotTracking;
  int32_t level = 0;
  for (uint32_t i = 0; i < t->depth; ++i) level += t->frames[i].domain == domain ? 1 : 0;
  if (t->depth == kMaxRangeDepth) {
    ++t->overflow;  // too deep to track: counted, neither recorded nor attributed
    return level;
  }
  CaptureWindow& window = Shim().window;
  uint64_t now = 0;
  bool step = false;
  const bool context = IsContextDomain(domain);
  // A push on an empty stack may begin a steps window; that push is then its first record.
  if (t->depth == 0 && !context && window.watching_steps()) {
    now = RecordClockNs();
    step = window.OnTopLevelPush(name != 0 ? Shim().strings.Get(name) : std::string_view(), now);
  }
  const bool record =
      mode == EventMode::kRecord || (step && CurrentEventMode() == EventMode::kRecord);
  if (!record) {
    t->frames[t->depth++] = RangeFrame{0, 0, name, domain, level, 0, step ? 1u : 0u};
    return level;
  }
  if (now == 0) now = RecordClockNs();
  window.SyncThread(t);
  const uint32_t parent = t->current_node;
  const uint32_t node = Shim().paths.Intern(PathKey{parent, name, domain});
  RangeFrame& frame = t->frames[t->depth++];
  // When the path table is full the range is not recorded and launches stay on the parent.
  frame.node = node != 0 ? node : parent;
  frame.pushed_node = node;
  frame.name = name;
  frame.domain = domain;
  frame.level = level;
  frame.step = step ? 1 : 0;
  frame.sent = node != 0 && !context &&
               t->ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{now, t->tid, node});
  t->current_node = frame.node;
  return level;
}

// Runs on: app thread inside an NVTX pop.
int Pop(uint32_t domain) noexcept {
  const EventMode mode = CurrentEventMode();
  if (mode == EventMode::kIgnore) return kNotTracking;
  ThreadState* t = CurrentThread();
  if (t == nullptr) return kNotTracking;
  if (t->overflow > 0) {
    --t->overflow;
    return 0;
  }
  uint32_t index = t->depth;
  while (index > 0 && t->frames[index - 1].domain != domain) --index;
  if (index == 0) return kNothingToPop;
  --index;
  const bool record = mode == EventMode::kRecord;
  if (record) Shim().window.SyncThread(t);
  const RangeFrame closed = t->frames[index];
  const uint64_t now = record || closed.step != 0 ? RecordClockNs() : 0;
  if (record && closed.sent != 0) {
    t->ring.Push(wire::RecordType::kRangePop, wire::RangeEvent{now, t->tid, closed.pushed_node});
  }
  // Remove the frame; frames above it (other domains) get the paths they now have (armed: left
  // for the next window's SyncThread to intern).
  for (uint32_t i = index; i + 1 < t->depth; ++i) {
    t->frames[i] = t->frames[i + 1];
    const uint32_t parent = i == 0 ? 0 : t->frames[i - 1].node;
    const uint32_t node =
        record ? Shim().paths.Intern(PathKey{parent, t->frames[i].name, t->frames[i].domain}) : 0;
    t->frames[i].node = node != 0 ? node : parent;
  }
  --t->depth;
  if (record) t->current_node = t->depth == 0 ? 0 : t->frames[t->depth - 1].node;
  if (closed.step != 0) Shim().window.OnStepPop(now);
  return closed.level;
}

// Start/end ranges, marks and thread names are recorded only while recording: they are not part
// of any stack a later window would need.
ThreadState* RecordingThread() noexcept {
  if (CurrentEventMode() != EventMode::kRecord) return nullptr;
  ThreadState* t = CurrentThread();
  if (t != nullptr) Shim().window.SyncThread(t);
  return t;
}

nvtxRangeId_t Start(uint32_t domain, uint32_t name) noexcept {
  ThreadState* t = RecordingThread();
  if (t == nullptr) return 0;
  const uint64_t id = Shim().next_range_id.fetch_add(1, std::memory_order_relaxed);
  t->ring.Push(wire::RecordType::kRangeStart,
               wire::RangeStart{RecordClockNs(), id, t->tid, name, domain, 0});
  return id;
}

void End(nvtxRangeId_t id) noexcept {
  if (id == 0) return;
  ThreadState* t = RecordingThread();
  if (t == nullptr) return;
  t->ring.Push(wire::RecordType::kRangeEnd, wire::RangeEnd{RecordClockNs(), id, t->tid, 0});
}

void Mark(uint32_t domain, uint32_t name) noexcept {
  ThreadState* t = RecordingThread();
  if (t == nullptr) return;
  t->ring.Push(wire::RecordType::kMark, wire::Mark{RecordClockNs(), t->tid, name, domain, 0});
}

// A mark with event attributes: a ValueMark, on the thread's path, when they carry an unsigned
// integer payload (the PyTorch annotator's FLOP counts), else a Mark.
void MarkWithAttributes(uint32_t domain, const nvtxEventAttributes_t* attributes) noexcept {
  const uint32_t name = MessageOf(attributes);
  constexpr size_t kNeeded = offsetof(nvtxEventAttributes_t, payload) + sizeof(uint64_t);
  if (attributes == nullptr || attributes->version == 0 || attributes->size < kNeeded) {
    Mark(domain, name);
    return;
  }
  uint64_t value = 0;
  switch (attributes->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      value = attributes->payload.ullValue;
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
      value = attributes->payload.uiValue;
      break;
    default:
      Mark(domain, name);
      return;
  }
  ThreadState* t = RecordingThread();
  if (t == nullptr) return;
  t->ring.Push(wire::RecordType::kValueMark,
               wire::ValueMark{RecordClockNs(), t->tid, name, domain, t->current_node, value});
}

void NameThread(uint32_t tid, uint32_t name) noexcept {
  if (name == 0) return;
  ThreadState* t = RecordingThread();
  if (t == nullptr) return;
  t->ring.Push(wire::RecordType::kThreadName, wire::ThreadName{tid, name});
}

// The handle of the domain named by string `id` (null for 0), noting the context domain's id.
nvtxDomainHandle_t DomainHandle(uint32_t id) noexcept {
  if (id == 0) return nullptr;
  if (Shim().strings.Get(id) == std::string_view(kContextDomain)) {
    Shim().context_domain.store(id, std::memory_order_relaxed);
  }
  return &g_domain_handles[id];
}

// The handlers NVTX calls: each one noexcept, with a last-resort catch that disables the shim.
#define GPUATTR_NVTX_GUARD(fallback, ...) \
  try {                                   \
    __VA_ARGS__;                          \
  } catch (...) {                         \
    DisableShim();                        \
  }                                       \
  return fallback

void NVTX_API MarkEx(const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(, MarkWithAttributes(0, attributes));
}
void NVTX_API MarkA(const char* message) noexcept {
  GPUATTR_NVTX_GUARD(, Mark(0, InternAscii(message)));
}
void NVTX_API MarkW(const wchar_t* message) noexcept {
  GPUATTR_NVTX_GUARD(, Mark(0, InternWide(message)));
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(0, return Start(0, MessageOf(attributes)));
}
nvtxRangeId_t NVTX_API RangeStartA(const char* message) noexcept {
  GPUATTR_NVTX_GUARD(0, return Start(0, InternAscii(message)));
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* message) noexcept {
  GPUATTR_NVTX_GUARD(0, return Start(0, InternWide(message)));
}
void NVTX_API RangeEnd(nvtxRangeId_t id) noexcept { GPUATTR_NVTX_GUARD(, End(id)); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(kNotTracking, return Push(0, MessageOf(attributes)));
}
int NVTX_API RangePushA(const char* message) noexcept {
  GPUATTR_NVTX_GUARD(kNotTracking, return Push(0, InternAscii(message)));
}
int NVTX_API RangePushW(const wchar_t* message) noexcept {
  GPUATTR_NVTX_GUARD(kNotTracking, return Push(0, InternWide(message)));
}
int NVTX_API RangePop() noexcept { GPUATTR_NVTX_GUARD(kNotTracking, return Pop(0)); }
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) noexcept {
  GPUATTR_NVTX_GUARD(, NameThread(tid, InternAscii(name)));
}
void NVTX_API NameOsThreadW(uint32_t tid, const wchar_t* name) noexcept {
  GPUATTR_NVTX_GUARD(, NameThread(tid, InternWide(name)));
}

void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain,
                           const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(, MarkWithAttributes(DomainId(domain), attributes));
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(0, return Start(DomainId(domain), MessageOf(attributes)));
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t /*domain*/, nvtxRangeId_t id) noexcept {
  GPUATTR_NVTX_GUARD(, End(id));
}
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain,
                               const nvtxEventAttributes_t* attributes) noexcept {
  GPUATTR_NVTX_GUARD(kNotTracking, return Push(DomainId(domain), MessageOf(attributes)));
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) noexcept {
  GPUATTR_NVTX_GUARD(kNotTracking, return Pop(DomainId(domain)));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t /*domain*/,
                                                  const char* text) noexcept {
  GPUATTR_NVTX_GUARD(nullptr, const uint32_t id = InternAscii(text);
                     if (id != 0) return &g_string_handles[id]);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t /*domain*/,
                                                  const wchar_t* text) noexcept {
  GPUATTR_NVTX_GUARD(nullptr, const uint32_t id = InternWide(text);
                     if (id != 0) return &g_string_handles[id]);
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) noexcept {
  GPUATTR_NVTX_GUARD(nullptr, return DomainHandle(InternAscii(name)));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) noexcept {
  GPUATTR_NVTX_GUARD(nullptr, return DomainHandle(InternWide(name)));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t /*domain*/) noexcept {}
void NVTX_API Initialize(const void* /*reserved*/) noexcept {}

#undef GPUATTR_NVTX_GUARD

// Stores `handler` in slot `index` when the table has it. `Fn` is NVTX's own pointer type, so
// NVTX calls the handler through exactly the type it was converted from.
template <typename Fn>
void Install(NvtxFunctionTable table, unsigned size, unsigned index, Fn handler) noexcept {
  if (index >= size || table[index] == nullptr) return;
  *table[index] = reinterpret_cast<NvtxFunctionPointer>(handler);
}

bool ModuleTable(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module,
                 NvtxFunctionTable* table, unsigned* size) noexcept {
  *table = nullptr;
  *size = 0;
  return callbacks.GetModuleFunctionTable(module, table, size) != 0 && *table != nullptr;
}

}  // namespace

int InstallNvtxHandlers(NvtxGetExportTableFunc_t get_export_table) noexcept {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  constexpr size_t kNeeded = offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable) +
                             sizeof(callbacks->GetModuleFunctionTable);
  if (callbacks == nullptr || callbacks->struct_size < kNeeded ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (!ModuleTable(*callbacks, NVTX_CB_MODULE_CORE, &core, &core_size)) return 0;
  Install<nvtxMarkEx_impl_fntype>(core, core_size, NVTX_CBID_CORE_MarkEx, &MarkEx);
  Install<nvtxMarkA_impl_fntype>(core, core_size, NVTX_CBID_CORE_MarkA, &MarkA);
  Install<nvtxMarkW_impl_fntype>(core, core_size, NVTX_CBID_CORE_MarkW, &MarkW);
  Install<nvtxRangeStartEx_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangeStartEx,
                                        &RangeStartEx);
  Install<nvtxRangeStartA_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
  Install<nvtxRangeStartW_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
  Install<nvtxRangeEnd_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
  Install<nvtxRangePushEx_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
  Install<nvtxRangePushA_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangePushA, &RangePushA);
  Install<nvtxRangePushW_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangePushW, &RangePushW);
  Install<nvtxRangePop_impl_fntype>(core, core_size, NVTX_CBID_CORE_RangePop, &RangePop);
  Install<nvtxNameOsThreadA_impl_fntype>(core, core_size, NVTX_CBID_CORE_NameOsThreadA,
                                         &NameOsThreadA);
  Install<nvtxNameOsThreadW_impl_fntype>(core, core_size, NVTX_CBID_CORE_NameOsThreadW,
                                         &NameOsThreadW);

  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (ModuleTable(*callbacks, NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    Install<nvtxDomainMarkEx_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx,
                                          &DomainMarkEx);
    Install<nvtxDomainRangeStartEx_impl_fntype>(
        core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
    Install<nvtxDomainRangeEnd_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd,
                                            &DomainRangeEnd);
    Install<nvtxDomainRangePushEx_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx,
                                               &DomainRangePushEx);
    Install<nvtxDomainRangePop_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop,
                                            &DomainRangePop);
    Install<nvtxDomainRegisterStringA_impl_fntype>(
        core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
    Install<nvtxDomainRegisterStringW_impl_fntype>(
        core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
    Install<nvtxDomainCreateA_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA,
                                           &DomainCreateA);
    Install<nvtxDomainCreateW_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW,
                                           &DomainCreateW);
    Install<nvtxDomainDestroy_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy,
                                           &DomainDestroy);
    Install<nvtxInitialize_impl_fntype>(core2, core2_size, NVTX_CBID_CORE2_Initialize, &Initialize);
  }
  return 1;
}

}  // namespace gpuattr::inject
