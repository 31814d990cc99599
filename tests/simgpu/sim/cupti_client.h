// CuptiClient: a second CUPTI client inside a scenario process, as Kineto (torch.profiler) is one
// inside a training job (issue 43; the `cupti_client` op, tests/simgpu/README.md). It binds the
// CUPTI the process loads (GPUATTR_CUPTI_LIBRARY) by dlopen and dlsym, as Kineto does, then:
//   - start: subscribes (`cuptiSubscribe_v2`, named "simgpu-cupti-client"); when the one
//     subscriber slot of CUDA 13.0 is taken it gives up, as Kineto logs "CUPTI initialization
//     failed" and records nothing, so its records stay empty and its result is the error; else it
//     registers its own buffer callbacks and enables the kinds the op names;
//   - stop: flushes (forced), disables those kinds and unsubscribes; with `finalize`, then calls
//     cuptiFinalize, as Kineto does with TEARDOWN_CUPTI=1.
// Every kernel, memcpy and memset record its completion callback receives is kept, as the truth's
// activities name them (name, correlation id, start, end, kind), with the ordinal of the buffer it
// came in: times are on CUPTI's clock, which the fake converts device times to once per buffer.
// Independently of what CUPTI gives it, the scenario tells it (NoteActivity) every activity it
// launches; those of the client's kinds launched between start and stop are what it should have
// received (`launched_while_on`, correlation ids), whether or not it could subscribe.
//
// Threads: Start and Stop on the scenario thread that runs the op; the buffer callbacks on
// CUPTI's. mu_ (a leaf) guards the records. One client per process: CUPTI's buffer callbacks are
// plain functions, which reach it through a process-wide pointer.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_CUPTI_CLIENT_H_
#define GPUATTR_TESTS_SIMGPU_SIM_CUPTI_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpuattr::simgpu {

class CuptiClient {
 public:
  // `kinds`: "kernel", "memcpy", "memset" (the parser checked them). False with `error` set when
  // the process has no CUPTI to bind or the client is already started.
  bool Start(const std::vector<std::string>& kinds, std::string* error);
  void Stop(bool finalize);

  // The scenario launched an activity of this kind ("kernel", "memcpy", "memset").
  void NoteActivity(const std::string& kind, uint32_t correlation_id);

  // {"subscribe_result": CUptiResult, "records": [...], "launched_while_on": [...]}, or null when
  // never started.
  nlohmann::json ToJson();

  // The buffer callbacks' work (public for the plain functions CUPTI calls).
  void Completed(uint8_t* buffer, size_t valid_size);

  struct Api;  // the CUPTI entry points, bound by dlsym

 private:
  std::mutex mu_;
  const Api* api_ = nullptr;
  std::optional<int> subscribe_result_;
  std::string old_subscriber_;  // the first subscriber CUPTI named when it let this one in
  void* subscriber_ = nullptr;  // CUpti_SubscriberHandle while subscribed
  std::vector<uint32_t> enabled_;
  std::vector<std::string> started_kinds_;  // between start and stop, whatever CUPTI said
  std::vector<uint32_t> launched_while_on_;
  nlohmann::json records_ = nlohmann::json::array();
  uint64_t completed_buffers_ = 0;
};

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_CUPTI_CLIENT_H_
