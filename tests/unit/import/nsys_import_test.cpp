#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "import_test_util.h"
#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

using nlohmann::json;
using test_support::TempDir;

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  INFO((error != nullptr ? error : ""));
  sqlite3_free(error);
  REQUIRE(rc == SQLITE_OK);
}

std::string MakeDatabase(const TempDir& dir, const std::string& name, const std::string& sql) {
  const std::string path = dir.File(name);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  Exec(db, sql);
  sqlite3_close(db);
  return path;
}

// globalTid of pid 4242, tid 4243 as nsys encodes it (pid << 24 | tid, plus high bits).
constexpr char kSchema[] = R"(
  CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
    globalPid INTEGER, demangledName INTEGER, shortName INTEGER, mangledName INTEGER,
    gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
    staticSharedMemory INTEGER, dynamicSharedMemory INTEGER, registersPerThread INTEGER,
    graphNodeId INTEGER, graphId INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
    globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,
    returnValue INTEGER, callchainId INTEGER);
  CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
    endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER);
  INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void gemm<float>(float*)'),
    (3, 'gemm'), (4, 'cudaGraphLaunch_v10000'), (5, 'train_step'), (6, 'node_kernel');
)";

constexpr int64_t kGlobalTid = (int64_t{1} << 56) | (int64_t{4242} << 24) | 4243;
constexpr int64_t kGlobalPid = (int64_t{1} << 56) | (int64_t{4242} << 24);

TEST_CASE("Nsight Systems import: kernels, copies, runtime and NVTX", "[import][nsys]") {
  TempDir dir;
  const std::string tid = std::to_string(kGlobalTid);
  const std::string pid = std::to_string(kGlobalPid);
  const std::string path = MakeDatabase(dir, "profile.sqlite",
                                        std::string(kSchema) + R"(
    INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES
      (1000, 9000, 59, NULL, )" + tid + R"(, 5),
      (1100, 2000, 59, 'forward', )" + tid + R"(, NULL),
      (1500, NULL, 59, 'never_closed', )" + tid +
                                            R"(, NULL),
      (100, 200, 34, 'a mark', )" + tid + R"(, NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId) VALUES
      (1200, 1300, )" + tid + R"(, 7, 1), (5000, 5100, )" +
                                            tid + R"(, 8, 4);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,
      globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ,
      staticSharedMemory, dynamicSharedMemory, registersPerThread, graphNodeId) VALUES
      (1400, 1900, 0, 13, 7, )" + pid + R"(, 2, 3, 8, 1, 1, 256, 1, 1, 100, 28, 40, NULL),
      (5200, 5300, 0, 13, 8, )" + pid + R"(, 6, 6, 1, 1, 1, 32, 1, 1, 0, 0, 16, 77),
      (5300, 5450, 0, 14, 8, )" + pid + R"(, 6, 6, 1, 1, 1, 32, 1, 1, 0, 0, 16, 78),
      (9500, 9600, 0, 13, 31, )" + pid + R"(, 6, 6, 1, 1, 1, 32, 1, 1, 0, 0, 16, NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, correlationId,
      globalPid, bytes, copyKind) VALUES (2500, 2600, 0, 13, 0, )" +
                                            pid + R"(, 4096, 1);
  )");
  const Imported imported = ImportPaths({path});
  CHECK(imported.report["capture"]["source"]["format"] == "nsys");
  REQUIRE(imported.report["processes"].size() == 1);
  const json& process = imported.report["processes"][0];
  CHECK(process["pid"] == 4242);
  CHECK(process["totals"]["kernels"] == 4);
  CHECK(process["totals"]["memcpys"] == 1);
  const json& device = process["devices"][0];
  CHECK(device["span_ns"] == 9600 - 1400);
  CHECK(device["busy_ns"] == 500 + 250 + 100 + 100);

  const auto gemm = Where(imported.activities, "correlation_id", 7);
  REQUIRE(gemm.size() == 1);
  CHECK(gemm[0]["name"] == "void gemm<float>(float*)");
  CHECK(gemm[0]["path"] == json::array({"train_step", "forward"}));
  CHECK(gemm[0]["launch_ns"] == 1200);
  const auto graph = Where(imported.activities, "correlation_id", 8);
  REQUIRE(graph.size() == 2);
  for (const json& kernel : graph) CHECK(kernel["path"] == json::array({"train_step"}));
  const auto orphan = Where(imported.activities, "correlation_id", 31);
  REQUIRE(orphan.size() == 1);
  CHECK(orphan[0]["reason"] == "launch_not_seen");
}

TEST_CASE("Nsight Systems import: missing tables and older columns are tolerated",
          "[import][nsys]") {
  TempDir dir;
  // No StringIds, no RUNTIME, no NVTX; a KERNEL table without most columns.
  const std::string path = MakeDatabase(dir, "old.sqlite",
                                        R"(
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 30, 1, 7, 3, )" +
                                            std::to_string(kGlobalPid) + R"(),
                                                  (20, 50, 1, 8, 4, )" +
                                            std::to_string(kGlobalPid) + R"();
  )");
  const Imported imported = ImportPaths({path});
  const json& process = imported.report["processes"][0];
  CHECK(process["totals"]["kernels"] == 2);
  CHECK(process["devices"][0]["busy_ns"] == 40);
  CHECK(process["coverage"]["unattributed"][0]["reason"] == "launch_not_seen");
}

TEST_CASE("Nsight Systems import: a name id that StringIds lacks is no name (found by fuzzing)",
          "[import][nsys]") {
  TempDir dir;
  // The launch's nameId 99 and the kernel's name id 98 are in no StringIds row: the launch is
  // still joined to its kernel, which has no name. (The replay read string 0 before.)
  const std::string tid = std::to_string(kGlobalTid);
  const std::string path = MakeDatabase(dir, "unnamed.sqlite",
                                        std::string(kSchema) + R"(
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId) VALUES
      (100, 200, )" + tid + R"(, 7, 99);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,
      globalPid, demangledName) VALUES (300, 400, 0, 13, 7, )" +
                                            std::to_string(kGlobalPid) + R"(, 98);
  )");
  const Imported imported = ImportPaths({path});
  const json& process = imported.report["processes"][0];
  CHECK(process["totals"]["kernels"] == 1);
  const auto kernel = Where(imported.activities, "correlation_id", 7);
  REQUIRE(kernel.size() == 1);
  CHECK(kernel[0]["launch_ns"] == 100);
}

TEST_CASE("Nsight Systems import: shared memory at the edge of int64 saturates (found by fuzzing)",
          "[import][nsys]") {
  TempDir dir;
  // static + dynamic overflowed int64 before the sum was taken of clamped terms.
  const std::string path = MakeDatabase(dir, "shared.sqlite",
                                        std::string(kSchema) + R"(
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,
      globalPid, shortName, staticSharedMemory, dynamicSharedMemory) VALUES
      (300, 400, 0, 13, 7, )" + std::to_string(kGlobalPid) +
                                            R"(, 3, 9223372036854775807, 100);
  )");
  const Imported imported = ImportPaths({path});
  const json& families = imported.report["processes"][0]["families"];
  REQUIRE(families.size() == 1);
  REQUIRE(families[0]["shapes"].size() == 1);
  CHECK(families[0]["shapes"][0]["shared_memory_bytes"] == 4294967295u);
}

TEST_CASE("Nsight Systems import: device names come from TARGET_INFO_GPU", "[import][nsys]") {
  TempDir dir;
  const std::string path = MakeDatabase(dir, "named.sqlite",
                                        R"(
    CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, cuDevice INTEGER);
    INSERT INTO TARGET_INFO_GPU VALUES (0, 1, 'NVIDIA H200', 0), (0, 0, 'NVIDIA H100', 1);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 30, 0, 7, 3, )" +
                                            std::to_string(kGlobalPid) + R"();
  )");
  const Imported imported = ImportPaths({path});
  const json& devices = imported.report["processes"][0]["devices"];
  REQUIRE(devices.size() == 1);
  CHECK(devices[0]["id"] == 0);
  CHECK(devices[0]["name"] == "NVIDIA H200");
  // Without TARGET_INFO_SESSION_START_TIME the start is not known; host and clock never are.
  CHECK(imported.report["capture"]["started_at"] == nullptr);
  CHECK(imported.report["capture"]["host"] == nullptr);
  CHECK(imported.report["capture"]["clock"] == nullptr);
}

TEST_CASE("Nsight Systems import: the start time is the session's", "[import][nsys]") {
  TempDir dir;
  const std::string path = MakeDatabase(dir, "started.sqlite",
                                        R"(
    CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
    INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1733097600000000000, '', '');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1500, 3000, 0, 7, 3, )" +
                                            std::to_string(kGlobalPid) + R"();
  )");
  const Imported imported = ImportPaths({path});
  CHECK(imported.report["capture"]["started_at"] == "2024-12-02T00:00:00.000000000Z");
  CHECK(imported.report["capture"]["clock"] == nullptr);
}

TEST_CASE("Nsight Systems import: an SQLite file that is not an Nsight export is a data error",
          "[import][nsys]") {
  TempDir dir;
  const std::string path = MakeDatabase(dir, "other.sqlite", R"(
    CREATE TABLE users (id INTEGER, name TEXT);
    INSERT INTO users VALUES (1, 'a');
  )");
  ImportOptions options;
  options.files = {path};
  StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kDataLoss);
  CHECK(result.status().message().find("not an Nsight Systems export") != std::string::npos);
}

TEST_CASE("Nsight Systems import: a file that is not a database is a data error",
          "[import][nsys]") {
  TempDir dir;
  const std::string path = dir.File("fake.sqlite");
  std::ofstream(path) << "SQLite format 3" << std::string(1, '\0') << "garbage garbage";
  ImportOptions options;
  options.files = {path};
  options.format = "nsys";
  StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gpuattr::collector::testing
