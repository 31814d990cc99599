// fuzz-smoke for merge inputs (see fuzz_smoke.h): the tokens of a report file.
#include "fuzz_smoke.h"
#include "merge_fuzz_entry.h"

int main(int argc, char** argv) {
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::MergeReportBytes,
                                     gpuattr::fuzz::ReportFileTokens());
}
