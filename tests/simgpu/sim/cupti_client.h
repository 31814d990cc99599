// CuptiClient: a second CUPTI client inside a scenario process, as Kineto (torch.profiler) is one
// inside a training job (issue 43; the `cupti_client` op, tests/simgpu/README.md). It binds the
// CUPTI the process loads (GPUATTR_CUPTI_LIBRARY) by dlopen and dlsym, as Kineto does, then:
//   - start: subscribes (`cuptiSubscribe_v2`, named "simgpu-cupti-client"); when the one
//     subscriber slot of CUDA 13.0 is taken it gives up, as Kineto logs "CUPTI initialization
//     failed" and records nothing, so its records stay empty and its result is the error; else it
//     registers its own buffer callbacks and enables the kinds the op names;
//   - stop: flushes (forced), disables those kinds and unsubscribes.
// Every kernel, memcpy and memset record its completion callback receives is kept, as the truth's
// activities name them (name, correlation id, start, end, kind), with the ordinal of the buffer it
// came in: times are on CUPTI's clock, which the fake converts device times to once per buffer.
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
  void Stop();

  // {"subscribe_result": CUptiResult, "records": [...]}, or null when never started.
  nlohmann::json ToJson();

  // The buffer callbacks' work (public for the plain functions CUPTI calls).
  void Completed(uint8_t* buffer, size_t valid_size);

  struct Api;  // the CUPTI entry points, bound by dlsym

 private:
  std::mutex mu_;
  const Api* api_ = nullptr;
  std::optional<int> subscribe_result_;
  void* subscriber_ = nullptr;  // CUpti_SubscriberHandle while subscribed
  std::vector<uint32_t> enabled_;
  nlohmann::json records_ = nlohmann::json::array();
  uint64_t completed_buffers_ = 0;
};

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_CUPTI_CLIENT_H_
