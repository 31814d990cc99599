// fuzz-smoke for Nsight Systems databases (see fuzz_smoke.h): the tokens of the SQL that builds
// one, values of the wrong type and at the edges of 64 bits among them.
#include <string>
#include <vector>

#include "fuzz_smoke.h"
#include "nsys_fuzz_entry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> sql_tokens = {
      ",",
      "(",
      ")",
      ";",
      "NULL",
      "-1",
      "0",
      "9223372036854775807",
      "-9223372036854775808",
      "1e308",
      "'x'",
      "X'00ff'",
      "''",
      "59",
      "60",
      "INSERT INTO NVTX_EVENTS VALUES (",
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (",
      "INSERT INTO StringIds VALUES (",
      "DROP TABLE StringIds;",
      "CREATE TABLE TARGET_INFO_GPU (id, name, cuDevice);"};
  return gpuattr::fuzz::RunFuzzSmoke(argc, argv, gpuattr::fuzz::ImportNsysBytes, sql_tokens);
}
