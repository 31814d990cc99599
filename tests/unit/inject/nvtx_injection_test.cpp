// Drives the NVTX handlers the way NVTX3 does: through an export table whose
// GetModuleFunctionTable hands out arrays of slot addresses, then through the filled slots.
#include "nvtx/nvtx_injection.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ring_records.h"
#include "runtime/shim_state.h"
#include "runtime/thread_state.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

struct FakeModule {
  unsigned core_size = NVTX_CBID_CORE_SIZE;
  unsigned core2_size = NVTX_CBID_CORE2_SIZE;
  NvtxFunctionPointer core_slots[NVTX_CBID_CORE_SIZE + 1] = {};
  NvtxFunctionPointer core2_slots[NVTX_CBID_CORE2_SIZE + 1] = {};
  NvtxFunctionPointer* core_table[NVTX_CBID_CORE_SIZE + 1] = {};
  NvtxFunctionPointer* core2_table[NVTX_CBID_CORE2_SIZE + 1] = {};
  bool give_core2 = true;

  FakeModule() {
    // Index 0 is invalid and the last entry is the NULL sentinel, as in NVTX's own tables.
    for (unsigned i = 1; i < NVTX_CBID_CORE_SIZE; ++i) core_table[i] = &core_slots[i];
    for (unsigned i = 1; i < NVTX_CBID_CORE2_SIZE; ++i) core2_table[i] = &core2_slots[i];
  }
};

FakeModule* g_module = nullptr;

int NVTX_API GetModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* out,
                                    unsigned* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *out = g_module->core_table;
    *size = g_module->core_size;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2 && g_module->give_core2) {
    *out = g_module->core2_table;
    *size = g_module->core2_size;
    return 1;
  }
  return 0;
}

const NvtxExportTableCallbacks kCallbacks{sizeof(NvtxExportTableCallbacks),
                                          &GetModuleFunctionTable};

const void* NVTX_API GetExportTable(uint32_t id) {
  return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr;
}

const void* NVTX_API GetNoExportTable(uint32_t) { return nullptr; }

template <typename Fn>
Fn Core(NvtxCallbackIdCore id) {
  REQUIRE(g_module->core_slots[id] != nullptr);
  return reinterpret_cast<Fn>(g_module->core_slots[id]);
}

template <typename Fn>
Fn Core2(NvtxCallbackIdCore2 id) {
  REQUIRE(g_module->core2_slots[id] != nullptr);
  return reinterpret_cast<Fn>(g_module->core2_slots[id]);
}

using testing::DrainMyRing;
using Record = testing::RingRecord;

std::string NameOf(uint32_t string_id) { return std::string(Shim().strings.Get(string_id)); }

nvtxEventAttributes_t Attributes(const char* message) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  return attributes;
}

struct Installed {
  FakeModule module;
  Installed() {
    g_module = &module;
    REQUIRE(InstallNvtxHandlers(&GetExportTable) == 1);
  }
};

// The handlers a domain test calls, from the installed tables.
struct DomainHandlers {
  nvtxDomainCreateA_impl_fntype create =
      Core2<nvtxDomainCreateA_impl_fntype>(NVTX_CBID_CORE2_DomainCreateA);
  nvtxDomainRangePushEx_impl_fntype domain_push =
      Core2<nvtxDomainRangePushEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangePushEx);
  nvtxDomainRangePop_impl_fntype domain_pop =
      Core2<nvtxDomainRangePop_impl_fntype>(NVTX_CBID_CORE2_DomainRangePop);
  nvtxRangePushA_impl_fntype push = Core<nvtxRangePushA_impl_fntype>(NVTX_CBID_CORE_RangePushA);
  nvtxRangePop_impl_fntype pop = Core<nvtxRangePop_impl_fntype>(NVTX_CBID_CORE_RangePop);
};

TEST_CASE("push and pop produce RangePush/RangePop with path nodes and real depths", "[nvtx]") {
  Installed nvtx;
  auto push = Core<nvtxRangePushA_impl_fntype>(NVTX_CBID_CORE_RangePushA);
  auto pop = Core<nvtxRangePop_impl_fntype>(NVTX_CBID_CORE_RangePop);

  CHECK(push("step") == 0);
  CHECK(push("forward") == 1);
  const uint32_t node_forward = CurrentThreadIfAny()->current_node;
  CHECK(pop() == 1);
  CHECK(pop() == 0);
  CHECK(pop() == -1);  // nothing open: no record
  CHECK(CurrentThreadIfAny()->current_node == 0);

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 4);
  CHECK(records[0].type == wire::RecordType::kRangePush);
  CHECK(records[1].type == wire::RecordType::kRangePush);
  CHECK(records[2].type == wire::RecordType::kRangePop);
  CHECK(records[3].type == wire::RecordType::kRangePop);
  const auto step = records[0].As<wire::RangeEvent>();
  const auto forward = records[1].As<wire::RangeEvent>();
  CHECK(forward.node == node_forward);
  CHECK(Shim().paths.Get(step.node).parent == 0);
  CHECK(NameOf(Shim().paths.Get(step.node).name) == "step");
  CHECK(Shim().paths.Get(forward.node).parent == step.node);
  CHECK(NameOf(Shim().paths.Get(forward.node).name) == "forward");
  CHECK(records[2].As<wire::RangeEvent>().node == forward.node);
  CHECK(records[3].As<wire::RangeEvent>().node == step.node);
  CHECK(forward.timestamp_ns >= step.timestamp_ns);
  CHECK(step.tid == CurrentThreadIfAny()->tid);

  // The same stack again reuses the same nodes.
  push("step");
  push("forward");
  CHECK(CurrentThreadIfAny()->current_node == node_forward);
  pop();
  pop();
  DrainMyRing();
}

TEST_CASE("domains share one stack, and a domain pop removes that domain's latest frame",
          "[nvtx]") {
  Installed nvtx;
  const DomainHandlers handlers;
  auto [create, domain_push, domain_pop, push, pop] = handlers;

  nvtxDomainHandle_t app = create("app");
  REQUIRE(app != nullptr);
  CHECK(create("app") == app);  // one handle per name
  CHECK(create("other") != app);

  const nvtxEventAttributes_t y = Attributes("y");
  CHECK(push("x") == 0);
  CHECK(domain_push(app, &y) == 0);  // first frame of its domain
  CHECK(push("z") == 1);             // second frame of the default domain
  const uint32_t app_id = Shim().strings.Find("app");
  const uint32_t x_node = Shim().paths.Find(PathKey{0, Shim().strings.Find("x"), 0});
  const uint32_t y_node = Shim().paths.Find(PathKey{x_node, Shim().strings.Find("y"), app_id});
  REQUIRE(y_node != 0);
  CHECK(Shim().paths.Get(CurrentThreadIfAny()->current_node).parent == y_node);

  CHECK(domain_pop(app) == 0);  // removes y from under z
  const uint32_t z_now = Shim().paths.Find(PathKey{x_node, Shim().strings.Find("z"), 0});
  CHECK(CurrentThreadIfAny()->current_node == z_now);
  CHECK(domain_pop(app) == -1);
  CHECK(pop() == 1);
  CHECK(pop() == 0);

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 6);
  const auto pushed_y = records[1].As<wire::RangeEvent>();
  CHECK(pushed_y.node == y_node);
  CHECK(Shim().paths.Get(y_node).domain == app_id);
  CHECK(records[3].type == wire::RecordType::kRangePop);
  CHECK(records[3].As<wire::RangeEvent>().node == y_node);
  // z's pop reports the node z was pushed with (under y).
  CHECK(records[4].As<wire::RangeEvent>().node == records[2].As<wire::RangeEvent>().node);
}

TEST_CASE("context-domain ranges give their path to what is above them but send no record",
          "[nvtx]") {
  Installed nvtx;
  const DomainHandlers handlers;
  auto [create, domain_push, domain_pop, push, pop] = handlers;

  // What the Python annotator does on an autograd thread: the step and a module path as
  // context, then the `backward` leaf.
  nvtxDomainHandle_t context = create(kContextDomain);
  REQUIRE(context != nullptr);
  const nvtxEventAttributes_t step = Attributes("ProfilerStep#0");
  const nvtxEventAttributes_t module = Attributes("nn.Module: Net_0");
  CHECK(domain_push(context, &step) == 0);
  CHECK(domain_push(context, &module) == 1);
  CHECK(push("backward") == 0);
  const uint32_t context_id = Shim().strings.Find(kContextDomain);
  const uint32_t step_node =
      Shim().paths.Find(PathKey{0, Shim().strings.Find("ProfilerStep#0"), context_id});
  const uint32_t module_node =
      Shim().paths.Find(PathKey{step_node, Shim().strings.Find("nn.Module: Net_0"), context_id});
  REQUIRE(module_node != 0);
  const uint32_t leaf_node = CurrentThreadIfAny()->current_node;
  CHECK(Shim().paths.Get(leaf_node).parent == module_node);
  CHECK(pop() == 0);
  CHECK(domain_pop(context) == 1);
  CHECK(domain_pop(context) == 0);
  CHECK(CurrentThreadIfAny()->current_node == 0);

  // Only the leaf's push and pop, its node carrying the whole path.
  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 2);
  CHECK(records[0].type == wire::RecordType::kRangePush);
  CHECK(records[0].As<wire::RangeEvent>().node == leaf_node);
  CHECK(records[1].type == wire::RecordType::kRangePop);
  CHECK(records[1].As<wire::RangeEvent>().node == leaf_node);
}
TEST_CASE("messages decode from ASCII, wide and registered strings", "[nvtx]") {
  Installed nvtx;
  auto register_string =
      Core2<nvtxDomainRegisterStringA_impl_fntype>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push_ex = Core<nvtxRangePushEx_impl_fntype>(NVTX_CBID_CORE_RangePushEx);
  auto push_w = Core<nvtxRangePushW_impl_fntype>(NVTX_CBID_CORE_RangePushW);
  auto pop = Core<nvtxRangePop_impl_fntype>(NVTX_CBID_CORE_RangePop);

  nvtxStringHandle_t registered = register_string(nullptr, "registered-name");
  REQUIRE(registered != nullptr);
  nvtxEventAttributes_t attributes = Attributes(nullptr);
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = registered;
  push_ex(&attributes);
  push_w(L"gr\u00FC\u00DFe \u20AC");
  nvtxEventAttributes_t too_small = Attributes("ignored");
  too_small.size = 8;  // older than the message field: no name
  push_ex(&too_small);
  pop();
  pop();
  pop();

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 6);
  const PathKey first = Shim().paths.Get(records[0].As<wire::RangeEvent>().node);
  const PathKey second = Shim().paths.Get(records[1].As<wire::RangeEvent>().node);
  const PathKey third = Shim().paths.Get(records[2].As<wire::RangeEvent>().node);
  CHECK(NameOf(first.name) == "registered-name");
  CHECK(NameOf(second.name) ==
        "gr\xC3\xBC\xC3\x9F"
        "e \xE2\x82\xAC");
  CHECK(third.name == 0);
}

TEST_CASE("start/end ranges and marks are records with minted ids, off the stack", "[nvtx]") {
  Installed nvtx;
  auto start = Core<nvtxRangeStartA_impl_fntype>(NVTX_CBID_CORE_RangeStartA);
  auto end = Core<nvtxRangeEnd_impl_fntype>(NVTX_CBID_CORE_RangeEnd);
  auto mark = Core<nvtxMarkA_impl_fntype>(NVTX_CBID_CORE_MarkA);
  auto name_thread = Core<nvtxNameOsThreadA_impl_fntype>(NVTX_CBID_CORE_NameOsThreadA);

  const nvtxRangeId_t a = start("load");
  const nvtxRangeId_t b = start("save");
  CHECK(a != 0);
  CHECK(b != a);
  mark("checkpoint");
  end(a);
  name_thread(4242, "worker");
  CHECK(CurrentThreadIfAny()->current_node == 0);

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 5);
  CHECK(records[0].type == wire::RecordType::kRangeStart);
  CHECK(records[0].As<wire::RangeStart>().range_id == a);
  CHECK(NameOf(records[0].As<wire::RangeStart>().name_string) == "load");
  CHECK(records[2].type == wire::RecordType::kMark);
  CHECK(NameOf(records[2].As<wire::Mark>().name_string) == "checkpoint");
  CHECK(records[3].type == wire::RecordType::kRangeEnd);
  CHECK(records[3].As<wire::RangeEnd>().range_id == a);
  CHECK(records[4].type == wire::RecordType::kThreadName);
  CHECK(records[4].As<wire::ThreadName>().tid == 4242);
  CHECK(NameOf(records[4].As<wire::ThreadName>().name_string) == "worker");
}

TEST_CASE("a mark with an unsigned integer payload is a ValueMark on the thread's path", "[nvtx]") {
  Installed nvtx;
  DomainHandlers handlers;
  auto domain_mark = Core2<nvtxDomainMarkEx_impl_fntype>(NVTX_CBID_CORE2_DomainMarkEx);
  auto mark_ex = Core<nvtxMarkEx_impl_fntype>(NVTX_CBID_CORE_MarkEx);
  nvtxDomainHandle_t flops = handlers.create("gpuattr.flops");

  handlers.push("forward");
  const uint32_t forward_node = CurrentThreadIfAny()->current_node;
  nvtxEventAttributes_t attributes = Attributes("aten::mm float32");
  attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  attributes.payload.ullValue = (uint64_t{1} << 40) + 7;
  domain_mark(flops, &attributes);
  attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
  attributes.payload.ullValue = 0;
  attributes.payload.uiValue = 9;
  mark_ex(&attributes);
  attributes.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;  // not a count: a plain mark
  attributes.payload.dValue = 1.5;
  domain_mark(flops, &attributes);
  nvtxEventAttributes_t too_small = Attributes("older");
  too_small.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  too_small.size = offsetof(nvtxEventAttributes_t, payload);  // no payload field: a plain mark
  mark_ex(&too_small);
  handlers.pop();

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 6);
  REQUIRE(records[1].type == wire::RecordType::kValueMark);
  const auto counted = records[1].As<wire::ValueMark>();
  CHECK(counted.node == forward_node);
  CHECK(counted.value == (uint64_t{1} << 40) + 7);
  CHECK(NameOf(counted.name_string) == "aten::mm float32");
  CHECK(NameOf(counted.domain_string) == "gpuattr.flops");
  REQUIRE(records[2].type == wire::RecordType::kValueMark);
  CHECK(records[2].As<wire::ValueMark>().value == 9);
  CHECK(records[2].As<wire::ValueMark>().domain_string == 0);
  CHECK(records[3].type == wire::RecordType::kMark);
  CHECK(records[4].type == wire::RecordType::kMark);  // its message lies past its size too
}

TEST_CASE("unusable export tables are refused and short tables filled partially", "[nvtx]") {
  FakeModule module;
  g_module = &module;
  CHECK(InstallNvtxHandlers(nullptr) == 0);
  CHECK(InstallNvtxHandlers(&GetNoExportTable) == 0);

  module.core_size = NVTX_CBID_CORE_RangeStartA;  // an older, shorter table
  module.give_core2 = false;
  REQUIRE(InstallNvtxHandlers(&GetExportTable) == 1);
  CHECK(module.core_slots[NVTX_CBID_CORE_MarkA] != nullptr);
  CHECK(module.core_slots[NVTX_CBID_CORE_RangeStartA] == nullptr);
  CHECK(module.core_slots[NVTX_CBID_CORE_RangePushA] == nullptr);
}

}  // namespace
}  // namespace gpuattr::inject
