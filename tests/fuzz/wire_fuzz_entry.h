// The fuzz entry for the wire decoder and ProcessTrace: one input is a connection, a series of
// datagrams each framed as a little-endian uint32 length and that many bytes (a length past the
// end takes the rest). Each datagram goes to ProcessTrace::ConsumeMessage as the collector's
// ingest loop would hand it; the first refused one ends the connection, as there. Then Finish,
// BuildReport and RenderSummary. Shared by the libFuzzer driver and the fuzz-smoke test.
// Single-threaded.
#ifndef GPUATTR_TESTS_FUZZ_WIRE_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_WIRE_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuattr::fuzz {

// Returns true when every datagram was accepted, false when one was refused (kDataLoss). Any
// other status, a crash or a failed check in the report is the bug to find: it aborts.
bool ConsumeWireBytes(const uint8_t* data, size_t size);

// The framing above, for the seed generator: datagrams -> one fuzz input.
std::vector<uint8_t> FrameDatagrams(const std::vector<std::vector<uint8_t>>& datagrams);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_WIRE_FUZZ_ENTRY_H_
