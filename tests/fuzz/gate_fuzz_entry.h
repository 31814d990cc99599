// The fuzz entry for gate rules (collector/gate/): one input is the bytes of a rules file, parsed
// as `gpuattr gate --rules` parses it, then evaluated against two small fixed reports (a baseline
// and a slower current run of the gate_* simgpu scenarios, in tests/fuzz/gate_reports/) and
// rendered in every output format. Shared by the libFuzzer driver and the fuzz-smoke test.
// Single-threaded; the reports are loaded once, on first use.
#ifndef GPUATTR_TESTS_FUZZ_GATE_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_GATE_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace gpuattr::fuzz {

// Returns true when the rules parsed and evaluated, false when they were refused (not JSON, an
// invalid rule, a metric neither report holds). A crash or hang is the bug to find.
bool EvaluateGateRulesBytes(const uint8_t* data, size_t size);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_GATE_FUZZ_ENTRY_H_
