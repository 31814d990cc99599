// fuzz-smoke for report reading and rendering (see fuzz_smoke.h): the tokens of a report file.
#include "fuzz_smoke.h"
#include "report_fuzz_entry.h"

int main(int argc, char** argv) {
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::RenderReportBytes,
                                     gpuattr::fuzz::ReportFileTokens());
}
