// fuzz-smoke for merge inputs (see fuzz_smoke.h): the tokens are JSON
// punctuation, extreme numbers and wrongly typed values.
#include <string>
#include <vector>

#include "fuzz_smoke.h"
#include "merge_fuzz_entry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> tokens = {"{",
                                           "}",
                                           "[",
                                           "]",
                                           ",",
                                           ":",
                                           "\"",
                                           "\\u0007",
                                           "1e999",
                                           "-1",
                                           "-9223372036854775809",
                                           "18446744073709551616",
                                           "null",
                                           "\"\"",
                                           "[[[[[[[[",
                                           "{\"a\":{}}",
                                           "\xe2\x80\xa6",
                                           "\xff"};
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::MergeReportBytes, tokens);
}
