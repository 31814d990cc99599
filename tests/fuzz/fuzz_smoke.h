// The fuzz-smoke replay shared by the import, wire, gate, report and merge targets: every seed in a
// directory through a fuzz entry, then N mutations of them (fixed seed, so a failure reproduces).
// Mutations: bit flips, truncation, duplicated and deleted slices, and inserted tokens that the
// target's format gives meaning to. A crash or abort fails the ctest test; so does a seed the
// entry refuses (a seed is a valid input by construction). Single-threaded.
#ifndef GPUATTR_TESTS_FUZZ_FUZZ_SMOKE_H_
#define GPUATTR_TESTS_FUZZ_FUZZ_SMOKE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuattr::fuzz {

// Returns true when the entry accepted the input, false when it refused it cleanly.
using FuzzEntry = bool (*)(const uint8_t* data, size_t size);

// main() of a fuzz-smoke test: argv is CORPUS_DIR MUTATIONS. Returns the exit status.
int RunFuzzSmoke(int argc, char** argv, FuzzEntry entry, const std::vector<std::string>& tokens);

// JSON's punctuation, then `extra`: the tokens of a target whose input is JSON.
std::vector<std::string> JsonTokens(std::vector<std::string> extra);

// The tokens of a target whose input is a report file (`gpuattr report`, `gpuattr merge`): JSON
// punctuation, extreme numbers and wrongly typed values.
std::vector<std::string> ReportFileTokens();

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_FUZZ_SMOKE_H_
