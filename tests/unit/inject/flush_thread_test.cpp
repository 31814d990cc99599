// The flush thread's cycle, driven on the test thread against a socketpair peer that decodes
// every message with wire::MessageReader and checks the stream's invariants.
#include "runtime/flush_thread.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupti/subscriber.h"
#include "nvtx/nvtx_injection.h"
#include "runtime/shim_state.h"
#include "wire/codec.h"

namespace gpuattr::inject {
namespace {

// A minimal NVTX module: the CORE table only.
NvtxFunctionPointer g_core_slots[NVTX_CBID_CORE_SIZE + 1] = {};
NvtxFunctionPointer* g_core_table[NVTX_CBID_CORE_SIZE + 1] = {};

int NVTX_API GetModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* out,
                                    unsigned* size) {
  if (module != NVTX_CB_MODULE_CORE) return 0;
  for (unsigned i = 1; i < NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core_slots[i];
  *out = g_core_table;
  *size = NVTX_CBID_CORE_SIZE;
  return 1;
}
const NvtxExportTableCallbacks kCallbacks{sizeof(NvtxExportTableCallbacks),
                                          &GetModuleFunctionTable};
const void* NVTX_API GetExportTable(uint32_t id) {
  return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr;
}

int Push(const char* name) {
  return reinterpret_cast<nvtxRangePushA_impl_fntype>(g_core_slots[NVTX_CBID_CORE_RangePushA])(
      name);
}
int Pop() {
  return reinterpret_cast<nvtxRangePop_impl_fntype>(g_core_slots[NVTX_CBID_CORE_RangePop])();
}

// Kernel-only stand-in for cuptiActivityGetNextRecord (stateless, as the real one).
CUptiResult CUPTIAPI KernelOnlyNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  const size_t offset = *record == nullptr
                            ? 0
                            : static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) +
                                  sizeof(CUpti_ActivityKernel10);
  if (offset + sizeof(CUpti_ActivityKernel10) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

// The collector side: validates framing and the definition-before-use invariant.
struct Peer {
  explicit Peer(int peer_fd) : fd(peer_fd) {}

  int fd;
  std::vector<std::vector<uint8_t>> datagrams;
  std::vector<wire::RecordView> records;
  std::set<uint32_t> strings;
  std::set<uint32_t> nodes;
  std::vector<uint64_t> sequences;

  void ReceiveAll() {
    for (;;) {
      std::vector<uint8_t> datagram(wire::kMaxMessageBytes);
      const ssize_t n = recv(fd, datagram.data(), datagram.size(), MSG_DONTWAIT);
      if (n <= 0) return;
      datagram.resize(static_cast<size_t>(n));
      datagrams.push_back(std::move(datagram));
      wire::MessageReader reader;
      REQUIRE(reader.Open(datagrams.back().data(), static_cast<uint32_t>(n)) ==
              wire::DecodeError::kNone);
      sequences.push_back(reader.header().sequence);
      wire::RecordView view;
      while (reader.Next(&view)) Check(view);
    }
  }

  void Check(const wire::RecordView& view) {
    records.push_back(view);
    switch (view.type) {
      case wire::RecordType::kString:
        strings.insert(view.As<wire::String>().id);
        break;
      case wire::RecordType::kPathNode: {
        const auto node = view.As<wire::PathNode>();
        CHECK(strings.count(node.name_string) == 1);
        CHECK((node.parent == 0 || nodes.count(node.parent) == 1));
        nodes.insert(node.id);
        break;
      }
      case wire::RecordType::kRangePush:
      case wire::RecordType::kRangePop:
        CHECK(nodes.count(view.As<wire::RangeEvent>().node) == 1);
        break;
      case wire::RecordType::kKernel:
        CHECK(strings.count(view.As<wire::Kernel>().name_string) == 1);
        break;
      case wire::RecordType::kThreadName:
        CHECK(strings.count(view.As<wire::ThreadName>().name_string) == 1);
        break;
      default:
        break;
    }
  }

  std::string Text(uint32_t id) const {
    for (const wire::RecordView& view : records) {
      if (view.type == wire::RecordType::kString && view.As<wire::String>().id == id) {
        return std::string(view.StringText());
      }
    }
    return {};
  }

  size_t Count(wire::RecordType type) const {
    size_t n = 0;
    for (const wire::RecordView& view : records) n += view.type == type ? 1 : 0;
    return n;
  }
};

struct Harness {
  int peer_fd = -1;
  std::unique_ptr<FlushThread> flush = std::make_unique<FlushThread>(&Shim());
  Harness() {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    flush->Adopt(fds[0]);
    peer_fd = fds[1];
    REQUIRE(InstallNvtxHandlers(&GetExportTable) == 1);
  }
  ~Harness() { close(peer_fd); }
};

TEST_CASE("a session stream starts with Hello and defines every id before its first use",
          "[flush]") {
  Harness harness;
  SessionInfo info;
  info.pid = static_cast<uint32_t>(getpid());
  info.ppid = 1;
  info.rank = 3;
  harness.flush->SendHello(info);

  Push("step");
  Push("forward");
  Pop();
  std::thread worker([] {
    Push("autograd");
    Pop();
  });
  worker.join();
  Pop();
  harness.flush->Cycle();
  harness.flush->SendDiagnostics();
  harness.flush->SendGoodbye();
  harness.flush->FlushOutbox();

  Peer peer{harness.peer_fd};
  peer.ReceiveAll();
  REQUIRE_FALSE(peer.records.empty());
  for (size_t i = 0; i < peer.sequences.size(); ++i) CHECK(peer.sequences[i] == i);
  REQUIRE(peer.records.front().type == wire::RecordType::kHello);
  const auto hello = peer.records.front().As<wire::Hello>();
  CHECK(std::memcmp(hello.magic, wire::kHelloMagic, sizeof(hello.magic)) == 0);
  CHECK(hello.pid == info.pid);
  CHECK(hello.rank == 3);
  CHECK(hello.local_rank == -1);
  CHECK(peer.Text(hello.exe_string).find("gpuattr_inject_component_tests") != std::string::npos);
  CHECK(peer.Count(wire::RecordType::kRangePush) == 3);
  CHECK(peer.Count(wire::RecordType::kRangePop) == 3);
  CHECK(peer.Count(wire::RecordType::kPathNode) >= 3);
  // The OS name of a thread still alive at the cycle is sent (the worker has exited by then).
  bool named_me = false;
  for (const wire::RecordView& view : peer.records) {
    if (view.type == wire::RecordType::kThreadName &&
        view.As<wire::ThreadName>().tid == static_cast<uint32_t>(gettid())) {
      named_me = !peer.Text(view.As<wire::ThreadName>().name_string).empty();
    }
  }
  CHECK(named_me);
  CHECK(peer.records.back().type == wire::RecordType::kGoodbye);
  REQUIRE(peer.records[peer.records.size() - 2].type == wire::RecordType::kDiagnostics);
  const auto diagnostics = peer.records[peer.records.size() - 2].As<wire::Diagnostics>();
  CHECK(diagnostics.ring_dropped_records == 0);
  CHECK(diagnostics.socket_dropped_messages == 0);
}

TEST_CASE("an exited thread's ring is drained, then recycled for the next new thread", "[flush]") {
  Harness harness;
  harness.flush->SendHello(SessionInfo{});
  ThreadState* first = nullptr;
  std::thread one([&] {
    Push("one");
    first = CurrentThreadIfAny();
  });
  one.join();
  REQUIRE(first != nullptr);
  CHECK(first->status.load() == ThreadState::kRetired);
  harness.flush->Cycle();  // drains
  harness.flush->Cycle();  // sees it empty and retired
  CHECK(first->status.load() == ThreadState::kFree);
  ThreadState* second = nullptr;
  std::thread two([&] {
    Push("two");
    second = CurrentThreadIfAny();
  });
  two.join();
  CHECK(second == first);
  harness.flush->Cycle();
  harness.flush->FlushOutbox();
  Peer peer{harness.peer_fd};
  peer.ReceiveAll();
  CHECK(peer.Count(wire::RecordType::kRangePush) == 2);
}

TEST_CASE("completed CUPTI buffers become Kernel records after their name definitions", "[flush]") {
  Harness harness;
  ShimState& shim = Shim();
  shim.cupti.cuptiActivityGetNextRecord = &KernelOnlyNextRecord;
  shim.cupti_bound.store(true);
  REQUIRE(shim.buffers.Init(1 << 16, /*may_decline=*/true));
  harness.flush->SendHello(SessionInfo{});

  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  BufferRequested(&buffer, &size, &max_records);
  REQUIRE(buffer != nullptr);
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = 100;
  kernel.end = 200;
  kernel.correlationId = 5;
  kernel.name = "_Z6kernelv";
  std::memcpy(buffer, &kernel, sizeof(kernel));
  kernel.start = 0;  // an unfinished one, from a forced flush
  kernel.end = 0;
  std::memcpy(buffer + sizeof(kernel), &kernel, sizeof(kernel));
  BufferCompleted(nullptr, 0, buffer, size, 2 * sizeof(kernel));

  harness.flush->Cycle();
  harness.flush->SendDiagnostics();
  harness.flush->FlushOutbox();
  Peer peer{harness.peer_fd};
  peer.ReceiveAll();
  REQUIRE(peer.Count(wire::RecordType::kKernel) == 2);
  for (const wire::RecordView& view : peer.records) {
    if (view.type == wire::RecordType::kKernel) {
      CHECK(peer.Text(view.As<wire::Kernel>().name_string) == "_Z6kernelv");
      CHECK(view.As<wire::Kernel>().correlation_id == 5);
    }
  }
  CHECK(peer.records.back().As<wire::Diagnostics>().incomplete_records == 1);
}

CUptiResult CUPTIAPI FlushAllNothing(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI SevenDropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 7;
  return CUPTI_SUCCESS;
}

TEST_CASE("a stream's last cycle always collects CUPTI's dropped-record count", "[flush]") {
  // CUPTI is polled every kCuptiFlushEveryCycles cycles; the records it dropped since, at exit,
  // must still reach the final Diagnostics whatever the cycle count is then.
  static_assert(kCuptiFlushEveryCycles > 2);
  Harness harness;
  ShimState& shim = Shim();
  shim.cupti.cuptiActivityFlushAll = &FlushAllNothing;
  shim.cupti.cuptiActivityGetNumDroppedRecords = &SevenDropped;
  shim.cupti_bound.store(false);
  shim.cupti_active.store(true);
  harness.flush->SendHello(SessionInfo{});
  harness.flush->Cycle();  // polls: the first of a period
  harness.flush->Cycle();  // does not
  harness.flush->Cycle(/*last=*/true);
  harness.flush->SendDiagnostics();
  harness.flush->FlushOutbox();
  shim.cupti_active.store(false);
  Peer peer{harness.peer_fd};
  peer.ReceiveAll();
  REQUIRE(peer.records.back().type == wire::RecordType::kDiagnostics);
  CHECK(peer.records.back().As<wire::Diagnostics>().cupti_dropped_records == 14);
}

// Sends one control message to the shim, as the daemon does.
void SendControl(int fd, const wire::Control& control) {
  uint8_t buffer[256];
  wire::MessageWriter writer(buffer, sizeof(buffer));
  REQUIRE(writer.Append(control));
  const uint32_t size = writer.Finish(0);
  REQUIRE(send(fd, buffer, size, 0) == static_cast<ssize_t>(size));
}

TEST_CASE("an armed process records nothing until a steps window opens, then exactly its steps",
          "[flush][armed]") {
  Harness harness;
  ShimState& shim = Shim();
  // No CUPTI can be bound here: the window carries NVTX only and says so.
  setenv("GPUATTR_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
  shim.cupti_bound.store(false);
  shim.cupti_active.store(false);
  shim.hot_flags.fetch_or(kHotArmed);
  SessionInfo info;
  info.mode = wire::HelloMode::kArmed;
  harness.flush->SendHello(info, wire::HelloMode::kArmed);
  harness.flush->FlushOutbox();

  // A loader thread opens a range while armed and keeps it open across the window's start.
  std::atomic<int> loader_stage{0};
  std::thread loader([&] {
    Push("loader");
    loader_stage = 1;
    while (loader_stage.load() != 2) std::this_thread::yield();
    Push("io");
    Pop();
    Pop();
    loader_stage = 3;
  });
  while (loader_stage.load() != 1) std::this_thread::yield();
  Push("step");  // armed: kept on the stack, not recorded
  Pop();
  harness.flush->ArmedCycle();

  SendControl(harness.peer_fd,
              wire::Control{static_cast<uint32_t>(wire::ControlCommand::kOpenWindow), 7,
                            static_cast<uint32_t>(wire::WindowTrigger::kSteps), 2, 0, 0});
  harness.flush->ArmedCycle();
  CHECK(shim.window.phase() == CaptureWindow::kWaitingForStep);
  Push("warmup");  // not a step name: the window has not begun
  Pop();
  Push("step");  // begins the window
  Push("forward");
  Pop();
  loader_stage = 2;
  while (loader_stage.load() != 3) std::this_thread::yield();
  loader.join();
  Pop();
  Push("step");
  Pop();  // the second step: recording stops here
  CHECK(shim.window.phase() == CaptureWindow::kStepsDone);
  Push("step");  // after the window: not recorded
  Pop();
  harness.flush->ArmedCycle();
  CHECK_FALSE(harness.flush->window_open());

  Peer peer{harness.peer_fd};
  peer.ReceiveAll();
  REQUIRE(peer.records.front().type == wire::RecordType::kHello);
  CHECK(peer.records.front().As<wire::Hello>().mode ==
        static_cast<uint32_t>(wire::HelloMode::kArmed));
  // The window's stream restarts: a Hello{window} at sequence 0, then WindowBegin, ..., WindowEnd.
  size_t window_hello = 0;
  for (size_t i = 1; i < peer.records.size(); ++i) {
    if (peer.records[i].type == wire::RecordType::kHello) window_hello = i;
  }
  REQUIRE(window_hello > 0);
  CHECK(peer.records[window_hello].As<wire::Hello>().mode ==
        static_cast<uint32_t>(wire::HelloMode::kWindow));
  CHECK(peer.sequences.back() > 0);
  CHECK(peer.sequences[1] == 0);
  // Per thread, in push order: the app thread's step, forward, step; the loader's open range
  // (flagged, stamped with the window's begin) then io.
  std::map<uint32_t, std::vector<std::pair<std::string, uint16_t>>> pushes_by_thread;
  uint64_t first_step_push = 0;
  uint64_t loader_open_stamp = 0;
  for (const wire::RecordView& view : peer.records) {
    if (view.type != wire::RecordType::kRangePush) continue;
    const auto event = view.As<wire::RangeEvent>();
    std::string name;
    for (const wire::RecordView& def : peer.records) {
      if (def.type == wire::RecordType::kPathNode && def.As<wire::PathNode>().id == event.node) {
        name = peer.Text(def.As<wire::PathNode>().name_string);
      }
    }
    pushes_by_thread[event.tid].emplace_back(name, view.flags);
    if (name == "step" && first_step_push == 0) first_step_push = event.timestamp_ns;
    if (name == "loader") loader_open_stamp = event.timestamp_ns;
  }
  using Pushes = std::vector<std::pair<std::string, uint16_t>>;
  CHECK(pushes_by_thread[static_cast<uint32_t>(gettid())] ==
        Pushes{{"step", 0}, {"forward", 0}, {"step", 0}});
  REQUIRE(pushes_by_thread.size() == 2);
  for (const auto& [tid, pushes] : pushes_by_thread) {
    if (tid == static_cast<uint32_t>(gettid())) continue;
    CHECK(pushes == Pushes{{"loader", wire::kRangeFlagOpenBeforeWindow}, {"io", 0}});
  }
  CHECK(loader_open_stamp == first_step_push);
  CHECK(peer.Count(wire::RecordType::kRangePop) == 5);  // forward, io, loader, step, step
  CHECK(peer.Count(wire::RecordType::kRefusal) == 1);   // no CUPTI for this window
  REQUIRE(peer.Count(wire::RecordType::kWindowBegin) == 1);
  REQUIRE(peer.Count(wire::RecordType::kWindowEnd) == 1);
  for (const wire::RecordView& view : peer.records) {
    if (view.type == wire::RecordType::kWindowBegin) {
      const auto begin = view.As<wire::WindowBegin>();
      CHECK(begin.window_id == 7);
      CHECK(begin.cupti_attached == 0);
      CHECK(begin.timestamp_ns == first_step_push);
    }
  }
  const auto end = peer.records.back().As<wire::WindowEnd>();
  REQUIRE(peer.records.back().type == wire::RecordType::kWindowEnd);
  CHECK(end.window_id == 7);
  CHECK(end.reason == static_cast<uint32_t>(wire::WindowEndReason::kStepsDone));
  CHECK(end.detach == static_cast<uint32_t>(wire::DetachOutcome::kNotAttached));
  CHECK(end.steps_seen == 2);
  CHECK(end.timestamp_ns > first_step_push);

  shim.hot_flags.fetch_and(~kHotArmed);
  unsetenv("GPUATTR_CUPTI_LIBRARY");
}

}  // namespace
}  // namespace gpuattr::inject
