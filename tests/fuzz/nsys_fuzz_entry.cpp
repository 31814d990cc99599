#include "nsys_fuzz_entry.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "import/nsys_importer.h"
#include "import_fuzz_entry.h"

namespace gpuattr::fuzz {
namespace {

constexpr char kSqliteHeader[] = "SQLite format 3";  // and its NUL: 16 bytes
constexpr int kStepBudget = 1000;                    // progress callbacks of 1000 VM steps each

// The file the database is written to, in a private directory made once and removed at exit.
// A file, not a memfd: SQLite resolves /proc/self/fd/N to the memfd's name, which opens nothing.
class DatabaseFile {
 public:
  DatabaseFile() {
    char directory[] = "/tmp/gpuattr-nsys-fuzz-XXXXXX";
    if (::mkdtemp(directory) == nullptr) {
      std::perror("nsys fuzz setup");
      std::abort();
    }
    directory_ = directory;
    path_ = directory_ + "/export.sqlite";
  }
  ~DatabaseFile() {
    ::unlink(path_.c_str());
    ::rmdir(directory_.c_str());
  }
  DatabaseFile(const DatabaseFile&) = delete;
  DatabaseFile& operator=(const DatabaseFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string directory_;
  std::string path_;
};

// SQL may build tables and rows in its own database, and nothing else: no ATTACH (a file).
int OnlyThisDatabase(void*, int action, const char*, const char*, const char*, const char*) {
  return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

int StopAfterBudget(void* steps) { return ++*static_cast<int*>(steps) > kStepBudget ? 1 : 0; }

// The database file `sql` builds, or an empty string when the engine refuses the SQL.
std::string DatabaseBuiltBy(const std::string& sql) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) {
    sqlite3_close(raw);
    return "";
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  sqlite3_set_authorizer(db.get(), OnlyThisDatabase, nullptr);
  int steps = 0;
  sqlite3_progress_handler(db.get(), 1000, StopAfterBudget, &steps);
  sqlite3_limit(db.get(), SQLITE_LIMIT_LENGTH, 1 << 20);
  if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return "";
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db.get(), "main", &size, 0);
  if (bytes == nullptr) return "";
  std::string file(reinterpret_cast<const char*>(bytes), static_cast<size_t>(size));
  sqlite3_free(bytes);
  return file;
}

}  // namespace

bool ImportNsysBytes(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const bool is_file =
      size >= sizeof(kSqliteHeader) && std::memcmp(data, kSqliteHeader, sizeof(kSqliteHeader)) == 0;
  const std::string file = is_file ? input : DatabaseBuiltBy(input);
  if (file.empty()) return false;
  static const DatabaseFile database;
  FILE* out = std::fopen(database.path().c_str(), "wb");
  if (out == nullptr || std::fwrite(file.data(), 1, file.size(), out) != file.size() ||
      std::fclose(out) != 0) {
    std::perror("nsys fuzz: writing the database");
    std::abort();
  }
  return ReportIfImported(collector::ImportNsysFile(database.path()));
}

}  // namespace gpuattr::fuzz
