// fuzz-smoke for the Kineto importer (see fuzz_smoke.h): the tokens are JSON punctuation, numbers
// at the edges of exact time parsing, and the trace-event fields the importer keys on.
#include <string>
#include <vector>

#include "fuzz_smoke.h"
#include "import_fuzz_entry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> tokens = gpuattr::fuzz::JsonTokens(
      {"\\", "1e999", "-1", "0.0000001", "18446744073709551616", "\"ph\":\"X\"",
       "\"cat\":\"kernel\"", "\"correlation\":", "null", "\"ts\":", "\xff\xfe"});
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::ImportKinetoBytes, tokens);
}
