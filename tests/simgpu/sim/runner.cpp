#include "runner.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "cupti_client.h"
#include "driver.h"
#include "sim_clock.h"
#include "truth.h"

namespace gpuattr::simgpu {
namespace {

using nlohmann::json;

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// Everything one scenario process shares between its threads. Heap-allocated and never freed:
// exit/crash/fork end the process while other threads may still use it.
struct Process {
  Process(const Scenario& s, size_t i, std::string part)
      : scenario(s),
        spec(s.processes[i]),
        index(i),
        truth_part(std::move(part)),
        driver(s.launch_latency_ns, s.graph_node_gap_ns) {}

  const Scenario& scenario;
  const ProcessSpec& spec;
  const size_t index;
  std::string truth_part;
  Driver driver;
  ProcessTruth truth;
  CuptiClient cupti_client;

  std::mutex mu;  // leaf: guards the members below
  std::map<std::string, std::thread> threads;
  std::map<std::string, nvtxDomainHandle_t> domains;
  std::map<std::string, nvtxRangeId_t> start_end;
  std::vector<pid_t> children;
  bool truth_written = false;

  static HostTime Stamp() { return {Driver::Now()}; }

  nvtxDomainHandle_t Domain(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    nvtxDomainHandle_t& handle = domains[name];
    if (handle == nullptr) handle = nvtxDomainCreateA(name.c_str());
    return handle;
  }

  const ThreadSpec& Thread(const std::string& name) const {
    for (const ThreadSpec& thread : spec.threads) {
      if (thread.name == name) return thread;
    }
    return spec.threads[0];  // unreachable: the parser checked every reference
  }

  // Writes the truth part once (temp file + rename). With `wait_children`, first waits for forked
  // children, whose parts sit beside this one.
  void WriteTruth(bool wait_children) {
    std::vector<pid_t> to_wait;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (truth_written) return;
      truth_written = true;
      if (wait_children) to_wait = children;
    }
    for (pid_t child : to_wait) waitpid(child, nullptr, 0);
    std::optional<int> rank;
    if (const char* r = std::getenv("RANK"); r != nullptr && *r != '\0') rank = std::atoi(r);
    json process = truth.ToJson(getpid(), rank, spec.name);
    if (json client = cupti_client.ToJson(); !client.is_null()) process["cupti_client"] = client;
    json part = {{"processes", json::array({process})}};
    const std::string tmp = truth_part + ".tmp";
    {
      std::ofstream out(tmp);
      out << part.dump(1) << "\n";
    }
    std::rename(tmp.c_str(), truth_part.c_str());
  }

  [[noreturn]] void Fatal(const std::string& where, const std::string& what) {
    std::fprintf(stderr, "simgpu-run: process \"%s\", %s: %s\n", spec.name.c_str(), where.c_str(),
                 what.c_str());
    std::_Exit(2);
  }
};

class ThreadRunner {
 public:
  ThreadRunner(Process& process, const std::string& name)
      : p_(process),
        name_(name),
        rng_(std::hash<std::string>{}(std::to_string(process.scenario.seed) + "/" +
                                      std::to_string(process.index) + "/" + name)) {}

  void Run(const std::vector<Op>& ops) {
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    nvtxNameOsThreadA(Tid(), name_.c_str());
    RunOps(ops);
  }

 private:
  uint64_t Jittered(const Op& op) {
    if (op.jitter <= 0) return op.duration_ns;
    std::uniform_real_distribution<double> u(-op.jitter, op.jitter);
    const double ns = static_cast<double>(op.duration_ns) * (1.0 + u(rng_));
    return static_cast<uint64_t>(std::llround(std::max(0.0, ns)));
  }

  void RunOps(const std::vector<Op>& ops) {
    for (const Op& op : ops) RunOp(op);
  }

  static const char* KindName(SimgpuActivityType type) {
    switch (type) {
      case SIMGPU_ACTIVITY_MEMCPY:
        return "memcpy";
      case SIMGPU_ACTIVITY_MEMSET:
        return "memset";
      default:
        return "kernel";
    }
  }

  static std::string ActivityName(const DeviceWork& work) {
    if (work.type == SIMGPU_ACTIVITY_MEMCPY) return "memcpy_" + work.name;
    if (work.type == SIMGPU_ACTIVITY_MEMSET) return "memset";
    return work.name;
  }

  static json Optional(const auto& value) { return value ? json(*value) : json(nullptr); }

  // launch_ns: the host time the launch API was entered; launch_returned_ns: after it returned
  // (the shim stamps the launch between the two).
  json ActivityJson(const DeviceWork& work, uint32_t stream, const std::optional<uint32_t>& corr,
                    uint64_t launch_ns, uint64_t launch_returned_ns, uint64_t start_ns,
                    uint64_t end_ns) {
    json a = {{"kind", KindName(work.type)},
              {"name", ActivityName(work)},
              {"correlation_id", Optional(corr)},
              {"device", work.device},
              {"stream", stream},
              {"launch_ns", launch_ns},
              {"launch_returned_ns", launch_returned_ns},
              {"start_ns", start_ns},
              {"end_ns", end_ns},
              {"thread", name_},
              {"tid", Tid()}};
    if (work.type == SIMGPU_ACTIVITY_KERNEL) {
      a["grid"] = work.grid;
      a["block"] = work.block;
      a["shared_mem"] = work.shared_mem;
    } else {
      a["bytes"] = work.bytes;
    }
    return a;
  }

  void Work(const Op& op, SimgpuActivityType type) {
    DeviceWork work;
    work.type = type;
    work.name = type == SIMGPU_ACTIVITY_MEMSET ? std::string() : op.name;
    work.device = op.device;
    work.stream = op.stream;
    work.duration_ns = Jittered(op);
    work.grid = op.grid;
    work.block = op.block;
    work.shared_mem = op.shared_mem;
    work.static_shared_mem = op.static_shared_mem;
    work.registers = op.registers;
    work.bytes = op.bytes;
    work.peer_device = op.peer_device;
    work.value = op.value;
    const Attribution attribution = p_.truth.Attribute(name_);
    const WorkResult r = p_.driver.Submit(work, {name_, p_.truth.PathOf(name_)});
    const uint64_t launch_returned_ns = Driver::Now();
    if (!r.executed) return;
    json a = ActivityJson(work, work.stream, r.correlation_id, r.launch_ns, launch_returned_ns,
                          r.start_ns, r.end_ns);
    a["range_path"] = attribution.path;
    a["attribution"] = attribution.kind;
    a["graph_node"] = nullptr;
    NoteForCuptiClient(a);
    p_.truth.AddActivity(std::move(a));
  }

  void NoteForCuptiClient(const json& activity) {
    if (activity["correlation_id"].is_number()) {
      p_.cupti_client.NoteActivity(activity["kind"].get<std::string>(),
                                   activity["correlation_id"].get<uint32_t>());
    }
  }

  void GraphLaunch(const Op& op) {
    for (uint64_t i = 0; i < op.count; ++i) {
      const Attribution at_launch = p_.truth.Attribute(name_);
      std::string error;
      const GraphLaunchResult r = p_.driver.GraphLaunch(op.name, op.stream, &error);
      const uint64_t launch_returned_ns = Driver::Now();
      if (!error.empty()) p_.Fatal("graph_launch \"" + op.name + "\"", error);
      if (!r.executed) return;
      for (const GraphNodeRun& node : r.nodes) {
        json a = ActivityJson(node.work, op.stream, r.correlation_id, r.launch_ns,
                              launch_returned_ns, node.start_ns, node.end_ns);
        // A node captured with no range open falls through to the graph launch's own context
        // (docs/attribution.md, rule 1).
        const bool captured = !node.site.range_path.empty();
        a["range_path"] = captured ? node.site.range_path : at_launch.path;
        a["attribution"] = captured ? std::string("captured") : at_launch.kind;
        a["graph_node"] = Optional(node.node_id);
        a["graph_id"] = Optional(node.graph_id);
        a["capture_thread"] = node.site.thread;
        a["launch_path"] = at_launch.path;
        a["launch_attribution"] = at_launch.kind;
        NoteForCuptiClient(a);
        p_.truth.AddActivity(std::move(a));
      }
    }
  }

  void Fork(const Op& op) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) p_.Fatal("fork", "fork() failed");
    if (pid > 0) {
      std::lock_guard<std::mutex> lock(p_.mu);
      p_.children.push_back(pid);
      return;
    }
    // The child: only this thread exists. Run the named thread's ops, then exit normally.
    p_.driver.MarkForkedChild();
    p_.truth.ForkChild(name_, op.name);
    {
      std::lock_guard<std::mutex> lock(p_.mu);
      p_.truth_part += ".fork." + std::to_string(getpid());
      p_.truth_written = false;
      p_.children.clear();
      p_.threads.clear();  // their std::thread objects refer to the parent's threads
    }
    ThreadRunner child(p_, op.name);
    child.Run(p_.Thread(op.name).ops);
    p_.WriteTruth(/*wait_children=*/true);
    std::exit(0);
  }

  void RunOp(const Op& op) {
    switch (op.type) {
      case OpType::kPush: {
        SimClock::HostCall();
        p_.truth.Push(name_, op.name, op.domain, p_.Stamp());
        if (op.domain.empty()) {
          nvtxRangePushA(op.name.c_str());
        } else {
          nvtxEventAttributes_t attributes{};
          attributes.version = NVTX_VERSION;
          attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
          attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
          attributes.message.ascii = op.name.c_str();
          nvtxDomainRangePushEx(p_.Domain(op.domain), &attributes);
        }
        p_.truth.BoundaryReturned(name_, p_.Stamp());
        break;
      }
      case OpType::kPop: {
        SimClock::HostCall();
        const HostTime t = p_.Stamp();
        if (op.domain.empty()) {
          nvtxRangePop();
        } else {
          nvtxDomainRangePop(p_.Domain(op.domain));
        }
        p_.truth.Pop(name_, op.domain, t);
        p_.truth.BoundaryReturned(name_, p_.Stamp());
        break;
      }
      case OpType::kRangeStart: {
        SimClock::HostCall();
        p_.truth.RangeStart(op.id, name_, op.name, p_.Stamp());
        const nvtxRangeId_t id = nvtxRangeStartA(op.name.c_str());
        std::lock_guard<std::mutex> lock(p_.mu);
        p_.start_end[op.id] = id;
        break;
      }
      case OpType::kRangeEnd: {
        std::optional<nvtxRangeId_t> id;
        {
          std::lock_guard<std::mutex> lock(p_.mu);
          auto it = p_.start_end.find(op.id);
          if (it != p_.start_end.end()) {
            id = it->second;
            p_.start_end.erase(it);
          }
        }
        if (!id) p_.Fatal("range_end \"" + op.id + "\"", "no open range_start with that id");
        SimClock::HostCall();
        p_.truth.RangeEnd(op.id, p_.Stamp());
        nvtxRangeEnd(*id);
        break;
      }
      case OpType::kMark:
        SimClock::HostCall();
        p_.truth.Mark(name_, op.name, p_.Stamp());
        nvtxMarkA(op.name.c_str());
        break;
      case OpType::kLaunch:
        Work(op, SIMGPU_ACTIVITY_KERNEL);
        break;
      case OpType::kMemcpy:
        Work(op, SIMGPU_ACTIVITY_MEMCPY);
        break;
      case OpType::kMemset:
        Work(op, SIMGPU_ACTIVITY_MEMSET);
        break;
      case OpType::kCpu:
        SimClock::Spend(Jittered(op));
        break;
      case OpType::kStartThread: {
        std::lock_guard<std::mutex> lock(p_.mu);
        if (p_.threads.count(op.name) != 0) {
          p_.Fatal("start_thread \"" + op.name + "\"", "the thread is already running");
        }
        Process* process = &p_;
        const ThreadSpec* spec = &p_.Thread(op.name);
        p_.threads[op.name] = std::thread([process, spec] {
          ThreadRunner runner(*process, spec->name);
          runner.Run(spec->ops);
        });
        break;
      }
      case OpType::kJoinThread: {
        std::thread thread;
        {
          std::lock_guard<std::mutex> lock(p_.mu);
          auto it = p_.threads.find(op.name);
          if (it == p_.threads.end()) {
            p_.Fatal("join_thread \"" + op.name + "\"", "the thread was not started");
          }
          thread = std::move(it->second);
          p_.threads.erase(it);
        }
        thread.join();
        break;
      }
      case OpType::kCaptureBegin: {
        std::string error;
        if (!p_.driver.CaptureBegin(op.name, op.device, op.stream, &error)) {
          p_.Fatal("capture_begin \"" + op.name + "\"", error);
        }
        break;
      }
      case OpType::kCaptureEnd: {
        std::string error;
        if (!p_.driver.CaptureEnd(op.name, &error)) {
          p_.Fatal("capture_end \"" + op.name + "\"", error);
        }
        break;
      }
      case OpType::kGraphLaunch:
        GraphLaunch(op);
        break;
      case OpType::kSyncDevice:
        p_.driver.Sync(op.device, std::nullopt);
        break;
      case OpType::kSyncStream:
        p_.driver.Sync(op.device, op.stream);
        break;
      case OpType::kRepeat:
        for (uint64_t i = 0; i < op.count; ++i) RunOps(op.ops);
        break;
      case OpType::kRepeatUntilFile:
        for (uint64_t i = 0; i < op.count && access(op.file.c_str(), F_OK) != 0; ++i) {
          RunOps(op.ops);
        }
        break;
      case OpType::kFork:
        Fork(op);
        break;
      case OpType::kCuptiClientStart: {
        p_.driver.EnsureInit();  // the client binds the CUPTI the driver loads
        std::string error;
        if (!p_.cupti_client.Start(op.kinds, &error)) p_.Fatal("cupti_client start", error);
        break;
      }
      case OpType::kCuptiClientStop:
        p_.cupti_client.Stop(op.finalize_cupti);
        break;
      case OpType::kExit:
        p_.WriteTruth(/*wait_children=*/false);
        std::exit(op.exit_code);
      case OpType::kCrash: {
        p_.WriteTruth(/*wait_children=*/false);
        std::fflush(nullptr);
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);  // no core file in the app's cwd
        signal(op.signal, SIG_DFL);
        kill(getpid(), op.signal);
        std::_Exit(128 + op.signal);  // a blocked or ignored signal: still die
      }
    }
  }

  Process& p_;
  const std::string name_;
  std::mt19937_64 rng_;
};

}  // namespace

int RunProcess(const Scenario& scenario, size_t index, const std::string& truth_part) {
  // Never freed: scenario threads and atexit handlers may use it until the process is gone. Kept
  // reachable from a global, so that LeakSanitizer knows it is deliberate.
  static std::atomic<Process*> live_process{nullptr};
  auto* process = new Process(scenario, index, truth_part);
  live_process.store(process);
  const ThreadSpec& main_thread = scenario.processes[index].threads[0];
  ThreadRunner(*process, main_thread.name).Run(main_thread.ops);
  // Threads still running at the end of the main thread's ops are joined, as a program would.
  std::map<std::string, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(process->mu);
    threads.swap(process->threads);
  }
  for (auto& [name, thread] : threads) thread.join();
  process->WriteTruth(/*wait_children=*/true);
  return 0;
}

}  // namespace gpuattr::simgpu
