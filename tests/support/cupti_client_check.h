// CheckCuptiClientRecords: the scenario's second CUPTI client (the `cupti_client` op, simgpu
// README) got exactly what CUPTI gives a client alone in its process: one record per activity of
// its kinds launched while it was on (`launched_while_on`, which the simulation keeps without
// asking CUPTI), with the activity's kind, name and correlation id, its exact duration, and its
// times on CUPTI's clock: the truth's times plus one offset per buffer the client received.
#ifndef GPUATTR_TESTS_SUPPORT_CUPTI_CLIENT_CHECK_H_
#define GPUATTR_TESTS_SUPPORT_CUPTI_CLIENT_CHECK_H_

#include <nlohmann/json.hpp>

namespace gpuattr::test_support {

// `process`: one process of a simgpu truth file. Catch2 assertions.
void CheckCuptiClientRecords(const nlohmann::json& process);

}  // namespace gpuattr::test_support

#endif  // GPUATTR_TESTS_SUPPORT_CUPTI_CLIENT_CHECK_H_
