#include "import/nsys_importer.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::collector {
namespace {

// The tables an Nsight Systems export has that this importer reads (one is enough to be one).
constexpr const char* kNsightTables[] = {"StringIds",
                                         "CUPTI_ACTIVITY_KIND_KERNEL",
                                         "CUPTI_ACTIVITY_KIND_MEMCPY",
                                         "CUPTI_ACTIVITY_KIND_MEMSET",
                                         "CUPTI_ACTIVITY_KIND_RUNTIME",
                                         "CUPTI_ACTIVITY_KIND_DRIVER",
                                         "NVTX_EVENTS"};
constexpr size_t kMaxDevices = 1024;

uint32_t PidOf(int64_t global) { return static_cast<uint32_t>((global >> 24) & 0xFFFFFF); }
uint32_t TidOf(int64_t global) { return static_cast<uint32_t>(global & 0xFFFFFF); }

uint32_t ClampU32(int64_t value) {
  if (value < 0) return 0;
  if (value > std::numeric_limits<uint32_t>::max()) return std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(value);
}

struct StatementDeleter {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

class NsysReader {
 public:
  NsysReader(sqlite3* db, ImportedTrace* trace) : db_(db), trace_(trace) {}

  Status Read() {
    GPUATTR_RETURN_IF_ERROR(RequireNsightTables());
    GPUATTR_RETURN_IF_ERROR(ReadStrings());
    GPUATTR_RETURN_IF_ERROR(ReadDevices());
    GPUATTR_RETURN_IF_ERROR(ReadSessionStart());
    GPUATTR_RETURN_IF_ERROR(ReadKernels());
    GPUATTR_RETURN_IF_ERROR(ReadMemory("CUPTI_ACTIVITY_KIND_MEMCPY", DeviceWork::kMemcpy));
    GPUATTR_RETURN_IF_ERROR(ReadMemory("CUPTI_ACTIVITY_KIND_MEMSET", DeviceWork::kMemset));
    GPUATTR_RETURN_IF_ERROR(ReadApi("CUPTI_ACTIVITY_KIND_RUNTIME", wire::ApiDomain::kRuntime));
    GPUATTR_RETURN_IF_ERROR(ReadApi("CUPTI_ACTIVITY_KIND_DRIVER", wire::ApiDomain::kDriver));
    return ReadNvtx();
  }

 private:
  Status Error(const std::string& what) const {
    return DataLossError(what + ": " + sqlite3_errmsg(db_));
  }

  // The table's columns; empty when it does not exist.
  StatusOr<std::set<std::string>> Columns(const std::string& table) {
    GPUATTR_ASSIGN_OR_RETURN(Statement statement, Prepare("PRAGMA table_info(" + table + ")"));
    std::set<std::string> columns;
    int step;
    while ((step = sqlite3_step(statement.get())) == SQLITE_ROW) {
      const unsigned char* name = sqlite3_column_text(statement.get(), 1);
      if (name != nullptr) columns.insert(reinterpret_cast<const char*>(name));
    }
    if (step != SQLITE_DONE) return Error("cannot read the columns of " + table);
    return columns;
  }

  StatusOr<Statement> Prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      return Error("cannot query the database");
    }
    return Statement(statement);
  }

  // SELECT of `wanted` from `table`, NULL for the columns it lacks; null when the table is
  // missing or lacks one of the first `required` columns.
  StatusOr<Statement> Select(const std::string& table, const std::vector<std::string>& wanted,
                             size_t required, const std::string& where = "") {
    GPUATTR_ASSIGN_OR_RETURN(std::set<std::string> columns, Columns(table));
    for (size_t i = 0; i < required; ++i) {
      if (columns.count(wanted[i]) == 0) return Statement(nullptr);
    }
    std::string sql = "SELECT ";
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (i > 0) sql += ", ";
      sql += columns.count(wanted[i]) > 0 ? "\"" + wanted[i] + "\"" : std::string("NULL");
    }
    sql += " FROM " + table;
    if (!where.empty() && columns.count("eventType") > 0) sql += " WHERE " + where;
    return Prepare(sql);
  }

  static int64_t Int(sqlite3_stmt* statement, int column) {
    return sqlite3_column_int64(statement, column);
  }
  static bool IsNull(sqlite3_stmt* statement, int column) {
    return sqlite3_column_type(statement, column) == SQLITE_NULL;
  }

  uint32_t StringById(int64_t id) {
    auto it = strings_.find(id);
    return it == strings_.end() ? 0 : it->second;
  }

  Status Done(int step, const std::string& table) const {
    return step == SQLITE_DONE ? Status::Ok() : Error("cannot read " + table);
  }

  // A database with none of the tables an Nsight Systems export has is some other SQLite file.
  Status RequireNsightTables() {
    for (const char* table : kNsightTables) {
      GPUATTR_ASSIGN_OR_RETURN(std::set<std::string> columns, Columns(table));
      if (!columns.empty()) return Status::Ok();
    }
    return DataLossError(
        "not an Nsight Systems export: none of StringIds, CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS "
        "is in the database (make one with `nsys export --type sqlite REPORT.nsys-rep`)");
  }

  // TARGET_INFO_SESSION_START_TIME.utcEpochNs: the wall time of the session's start, from which
  // every timestamp of the export counts.
  Status ReadSessionStart() {
    GPUATTR_ASSIGN_OR_RETURN(Statement statement,
                             Select("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}, 1));
    if (!statement) return Status::Ok();
    int step = sqlite3_step(statement.get());
    if (step == SQLITE_ROW && !IsNull(statement.get(), 0) && Int(statement.get(), 0) > 0) {
      trace_->wall_clock = true;
      trace_->realtime_offset_ns = static_cast<uint64_t>(Int(statement.get(), 0));
      trace_->started_realtime_ns = trace_->realtime_offset_ns;
      step = SQLITE_DONE;
    }
    return Done(step, "TARGET_INFO_SESSION_START_TIME");
  }

  // TARGET_INFO_GPU: the CUDA device ordinal (cuDevice; older exports: id) and its name.
  Status ReadDevices() {
    GPUATTR_ASSIGN_OR_RETURN(std::set<std::string> columns, Columns("TARGET_INFO_GPU"));
    const std::string ordinal = columns.count("cuDevice") > 0 ? "cuDevice" : "id";
    GPUATTR_ASSIGN_OR_RETURN(Statement statement, Select("TARGET_INFO_GPU", {ordinal, "name"}, 2));
    if (!statement) return Status::Ok();
    int step;
    while ((step = sqlite3_step(statement.get())) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement.get(), 1));
      const int length = sqlite3_column_bytes(statement.get(), 1);
      const int64_t device = Int(statement.get(), 0);
      if (text == nullptr || length == 0 || IsNull(statement.get(), 0) || device < 0 ||
          device > std::numeric_limits<uint32_t>::max() || trace_->devices.size() >= kMaxDevices) {
        continue;
      }
      trace_->devices.push_back(
          {static_cast<uint32_t>(device),
           trace_->strings.Intern(std::string_view(text, static_cast<size_t>(length)))});
    }
    return Done(step, "TARGET_INFO_GPU");
  }

  Status ReadStrings() {
    GPUATTR_ASSIGN_OR_RETURN(Statement statement, Select("StringIds", {"id", "value"}, 2));
    if (!statement) return Status::Ok();
    int step;
    while ((step = sqlite3_step(statement.get())) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement.get(), 1));
      const int length = sqlite3_column_bytes(statement.get(), 1);
      if (text == nullptr) continue;
      strings_[Int(statement.get(), 0)] =
          trace_->strings.Intern(std::string_view(text, static_cast<size_t>(length)));
    }
    return Done(step, "StringIds");
  }

  // A well-formed interval, else skipped and counted.
  bool Interval(sqlite3_stmt* statement, uint64_t* start, uint64_t* end) {
    const int64_t s = Int(statement, 0);
    const int64_t e = Int(statement, 1);
    if (IsNull(statement, 0) || IsNull(statement, 1) || s < 0 || e < s) {
      ++trace_->skipped_events;
      return false;
    }
    *start = static_cast<uint64_t>(s);
    *end = static_cast<uint64_t>(e);
    return true;
  }

  Status ReadKernels() {
    const std::string table = "CUPTI_ACTIVITY_KIND_KERNEL";
    GPUATTR_ASSIGN_OR_RETURN(
        Statement statement,
        Select(table,
               {"start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                "demangledName", "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY",
                "blockZ", "staticSharedMemory", "dynamicSharedMemory", "registersPerThread"},
               2));
    if (!statement) return Status::Ok();
    sqlite3_stmt* row = statement.get();
    int step;
    while ((step = sqlite3_step(row)) == SQLITE_ROW) {
      ImportedActivity activity;
      if (!Interval(row, &activity.start_ns, &activity.end_ns)) continue;
      activity.kind = DeviceWork::kKernel;
      activity.device = ClampU32(Int(row, 2));
      activity.stream = ClampU32(Int(row, 3));
      activity.correlation = ClampU32(Int(row, 4));
      activity.pid = PidOf(Int(row, 5));
      activity.name = StringById(Int(row, IsNull(row, 6) ? 7 : 6));
      for (int i = 0; i < 3; ++i) {
        activity.grid[static_cast<size_t>(i)] = ClampU32(Int(row, 8 + i));
        activity.block[static_cast<size_t>(i)] = ClampU32(Int(row, 11 + i));
      }
      // Each clamped before the sum: two int64 columns can overflow it (found by fuzzing).
      const uint64_t shared = uint64_t{ClampU32(Int(row, 14))} + ClampU32(Int(row, 15));
      activity.shared_memory_bytes =
          static_cast<uint32_t>(std::min<uint64_t>(shared, std::numeric_limits<uint32_t>::max()));
      activity.registers_per_thread = ClampU32(Int(row, 16));
      trace_->activities.push_back(activity);
    }
    return Done(step, table);
  }

  Status ReadMemory(const std::string& table, DeviceWork kind) {
    GPUATTR_ASSIGN_OR_RETURN(
        Statement statement,
        Select(table,
               {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes",
                kind == DeviceWork::kMemcpy ? "copyKind" : "value", "srcKind", "dstKind"},
               2));
    if (!statement) return Status::Ok();
    sqlite3_stmt* row = statement.get();
    int step;
    while ((step = sqlite3_step(row)) == SQLITE_ROW) {
      ImportedActivity activity;
      if (!Interval(row, &activity.start_ns, &activity.end_ns)) continue;
      activity.kind = kind;
      activity.device = ClampU32(Int(row, 2));
      activity.stream = ClampU32(Int(row, 3));
      activity.correlation = ClampU32(Int(row, 4));
      activity.pid = PidOf(Int(row, 5));
      activity.bytes = static_cast<uint64_t>(std::max<int64_t>(0, Int(row, 6)));
      if (kind == DeviceWork::kMemcpy) {
        activity.copy_kind = static_cast<uint8_t>(std::min<uint32_t>(ClampU32(Int(row, 7)), 255));
        activity.src_kind = static_cast<uint8_t>(std::min<uint32_t>(ClampU32(Int(row, 8)), 255));
        activity.dst_kind = static_cast<uint8_t>(std::min<uint32_t>(ClampU32(Int(row, 9)), 255));
      } else {
        activity.memset_value = ClampU32(Int(row, 7));
      }
      trace_->activities.push_back(activity);
    }
    return Done(step, table);
  }

  Status ReadApi(const std::string& table, wire::ApiDomain domain) {
    GPUATTR_ASSIGN_OR_RETURN(
        Statement statement,
        Select(table, {"start", "end", "globalTid", "correlationId", "nameId"}, 4));
    if (!statement) return Status::Ok();
    sqlite3_stmt* row = statement.get();
    int step;
    while ((step = sqlite3_step(row)) == SQLITE_ROW) {
      ImportedApiCall call;
      if (!Interval(row, &call.start_ns, &call.end_ns)) continue;
      call.pid = PidOf(Int(row, 2));
      call.tid = TidOf(Int(row, 2));
      call.correlation = ClampU32(Int(row, 3));
      call.name = StringById(Int(row, 4));
      call.domain = static_cast<uint8_t>(domain);
      trace_->api_calls.push_back(call);
    }
    return Done(step, table);
  }

  Status ReadNvtx() {
    const std::string table = "NVTX_EVENTS";
    GPUATTR_ASSIGN_OR_RETURN(
        Statement statement,
        Select(table, {"start", "end", "eventType", "globalTid", "text", "textId"}, 4,
               "eventType IN (59, 60)"));
    if (!statement) return Status::Ok();
    sqlite3_stmt* row = statement.get();
    int step;
    while ((step = sqlite3_step(row)) == SQLITE_ROW) {
      const int64_t type = Int(row, 2);
      if (type != kNsysPushPopRange && type != kNsysStartEndRange) continue;
      ImportedRange range;
      if (!Interval(row, &range.start_ns, &range.end_ns)) continue;
      range.pid = PidOf(Int(row, 3));
      range.tid = TidOf(Int(row, 3));
      if (!IsNull(row, 4)) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(row, 4));
        const int length = sqlite3_column_bytes(row, 4);
        range.name = trace_->strings.Intern(
            text == nullptr ? std::string_view()
                            : std::string_view(text, static_cast<size_t>(length)));
      } else {
        range.name = StringById(Int(row, 5));
      }
      if (range.name == 0) range.name = trace_->strings.Intern("");
      (type == kNsysPushPopRange ? trace_->ranges : trace_->spans).push_back(range);
    }
    return Done(step, table);
  }

  sqlite3* db_;
  ImportedTrace* trace_;
  std::unordered_map<int64_t, uint32_t> strings_;
};

}  // namespace

StatusOr<ImportedTrace> ImportNsysFile(const std::string& path) {
  sqlite3* raw = nullptr;
  const int opened = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  if (opened != SQLITE_OK) {
    return DataLossError(path + ": cannot open as an SQLite database: " +
                         (raw != nullptr ? sqlite3_errmsg(raw) : "out of memory"));
  }
  ImportedTrace trace;
  trace.path = path;
  trace.format = "nsys";
  NsysReader reader(db.get(), &trace);
  Status status = reader.Read();
  if (!status.ok()) return DataLossError(path + ": " + status.message());
  return trace;
}

}  // namespace gpuattr::collector
