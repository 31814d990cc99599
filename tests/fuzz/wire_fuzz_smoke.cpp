// fuzz-smoke for the wire decoder and ProcessTrace (see fuzz_smoke.h): the tokens are field
// values that sit on the decoder's edges (lengths, record sizes, ids and timestamps at extremes).
#include <string>
#include <vector>

#include "fuzz_smoke.h"
#include "wire_fuzz_entry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> tokens = {
      std::string("\0\0\0\0", 4),           std::string("\xff\xff\xff\xff", 4),
      std::string("\x08\0\0\0", 4),         std::string("\x18\0\0\0", 4),
      std::string("\0\0\x01\0", 4),         std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8),
      std::string("\x01\0\0\0\0\0\0\0", 8), std::string("\x02\0\0\0", 4)};
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::ConsumeWireBytes, tokens);
}
