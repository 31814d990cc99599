// LoadReport (report_reader.h): the file streamed through a SAX handler that builds the document
// and puts step rows into columns; the depth and size limits; the schema check.
#include "report/report_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <istream>
#include <streambuf>
#include <utility>
#include <vector>

#include "report/report_json.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// The file as a stream buffer: 1 MiB reads, at most kMaxReportBytes in all (then the end of the
// stream, with too_large set), a read error ends it too (error set).
class ReportFileBuffer final : public std::streambuf {
 public:
  explicit ReportFileBuffer(int fd) : fd_(fd), buffer_(kReadBytes) {}

  int error() const { return error_; }
  bool too_large() const { return too_large_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (error_ != 0 || too_large_) return traits_type::eof();
    for (;;) {
      const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        error_ = errno;
        return traits_type::eof();
      }
      if (got == 0) return traits_type::eof();
      read_ += static_cast<uint64_t>(got);
      if (read_ > kMaxReportBytes) {
        too_large_ = true;
        return traits_type::eof();
      }
      setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
      return traits_type::to_int_type(*gptr());
    }
  }

 private:
  static constexpr size_t kReadBytes = size_t{1} << 20;
  int fd_;
  std::vector<char> buffer_;
  uint64_t read_ = 0;
  int error_ = 0;
  bool too_large_ = false;
};

// Builds the document from the parser's events as nlohmann's DOM parser would (a key met twice
// keeps its last value), except that the elements of processes[i].steps.rows go to `rows`.
// Returns false (ending the parse) at a value or key inside more than kMaxReportDepth containers.
class ReportSax final : public nlohmann::json_sax<Json> {
 public:
  ReportSax(Json* document, std::map<size_t, StepRowColumns>* rows)
      : document_(document), rows_(rows) {}

  bool too_deep() const { return too_deep_; }

  bool null() override { return Scalar(nullptr); }
  bool boolean(bool value) override { return Scalar(value); }
  bool number_integer(number_integer_t value) override { return Scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return Scalar(value); }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return Scalar(value);
  }
  bool string(string_t& value) override { return Scalar(std::move(value)); }
  bool binary(binary_t& value) override { return Scalar(Json::binary(std::move(value))); }
  bool start_object(std::size_t /*elements*/) override { return Open(Json::object()); }
  bool start_array(std::size_t /*elements*/) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& key) override {
    if (TooDeep()) return false;
    key_ = std::move(key);
    const Frame& top = stack_.back();
    // A member met again replaces the one before, rows and all.
    if (top.role == Role::kRoot && key_ == "processes") {
      rows_->clear();
    } else if ((top.role == Role::kProcess && key_ == "steps") ||
               (top.role == Role::kSteps && key_ == "rows")) {
      rows_->erase(top.process);
    }
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  // Where a container lies: the path to the rows, a row (its members go to columns), a value
  // inside a row's member or a row that is not an object (built aside, then handed over), or
  // anything else.
  enum class Role { kRoot, kProcesses, kProcess, kSteps, kRows, kRow, kAside, kOther };
  struct Frame {
    Json* container;  // null for kRow
    Role role;
    size_t process;  // kProcess and within
  };

  bool TooDeep() {
    too_deep_ = too_deep_ || stack_.size() > kMaxReportDepth;
    return too_deep_;
  }

  StepRowColumns& RowsOf(size_t process) { return (*rows_)[process]; }

  // `value` placed in the container on top (or as the document); its address there.
  Json* Place(Json value) {
    if (stack_.empty()) {
      *document_ = std::move(value);
      return document_;
    }
    Json& container = *stack_.back().container;
    if (container.is_array()) {
      container.push_back(std::move(value));
      return &container.back();
    }
    Json& member = container[key_];
    member = std::move(value);
    return &member;
  }

  bool Scalar(Json value) {
    if (TooDeep()) return false;
    if (!stack_.empty() && stack_.back().role == Role::kRows) {
      RowsOf(stack_.back().process).Append(std::move(value));
    } else if (!stack_.empty() && stack_.back().role == Role::kRow) {
      RowsOf(stack_.back().process).SetMember(key_, std::move(value));
    } else {
      Place(std::move(value));
    }
    return true;
  }

  bool Open(Json empty) {
    if (TooDeep()) return false;
    const bool is_array = empty.is_array();
    if (stack_.empty()) {
      stack_.push_back({Place(std::move(empty)), is_array ? Role::kOther : Role::kRoot, 0});
      return true;
    }
    const Frame parent = stack_.back();
    if (parent.role == Role::kRows && !is_array) {
      RowsOf(parent.process).BeginRow();
      stack_.push_back({nullptr, Role::kRow, parent.process});
      return true;
    }
    if (parent.role == Role::kRows || parent.role == Role::kRow) {
      aside_ = std::move(empty);
      aside_key_ = key_;
      stack_.push_back({&aside_, Role::kAside, parent.process});
      return true;
    }
    Json* placed = Place(std::move(empty));
    Role role = parent.role == Role::kAside ? Role::kAside : Role::kOther;
    size_t process = parent.process;
    if (parent.role == Role::kRoot && is_array && key_ == "processes") {
      role = Role::kProcesses;
    } else if (parent.role == Role::kProcesses && !is_array) {
      role = Role::kProcess;
      process = parent.container->size() - 1;
    } else if (parent.role == Role::kProcess && !is_array && key_ == "steps") {
      role = Role::kSteps;
    } else if (parent.role == Role::kSteps && is_array && key_ == "rows") {
      role = Role::kRows;  // stays [] in the document
    }
    stack_.push_back({placed, role, process});
    return true;
  }

  bool Close() {
    const Frame done = stack_.back();
    stack_.pop_back();
    if (done.role != Role::kAside || stack_.empty()) return true;
    const Frame& parent = stack_.back();
    if (parent.role == Role::kRow) {
      RowsOf(parent.process).SetMember(aside_key_, std::move(aside_));
    } else if (parent.role == Role::kRows) {
      RowsOf(parent.process).Append(std::move(aside_));
    }
    return true;
  }

  Json* document_;
  std::map<size_t, StepRowColumns>* rows_;
  std::vector<Frame> stack_;
  std::string key_;        // the member the next value belongs to
  Json aside_;             // a row's member (or a row) of a type without a column, being built
  std::string aside_key_;  // its key
  bool too_deep_ = false;
};

Status CheckSchema(const Json& report, const std::string& path) {
  const auto version = report.is_object() ? report.find("schema_version") : report.end();
  if (!report.is_object() || version == report.end() || !version->is_string()) {
    return DataLossError("report " + Quoted(path) + " is JSON but not a gpuattr report: no " +
                         "schema_version \"" + kReportSchemaVersion + "\"");
  }
  if (version->get_ref<const std::string&>() != kReportSchemaVersion) {
    return DataLossError("report " + Quoted(path) + " has schema_version " +
                         version->dump(-1, ' ', true, Json::error_handler_t::replace) +
                         "; this gpuattr reads " + kReportSchemaVersion);
  }
  return Status::Ok();
}

// The rows array of processes[index], when it is one.
Json* RowsArray(Json& processes, size_t index) {
  Json& process = processes[index];
  if (!process.is_object()) return nullptr;
  const auto steps = process.find("steps");
  if (steps == process.end() || !steps->is_object()) return nullptr;
  const auto rows = steps->find("rows");
  return rows == steps->end() || !rows->is_array() ? nullptr : &*rows;
}

}  // namespace

LoadedReport LoadedReport::FromDocument(Json document) {
  LoadedReport loaded;
  loaded.document_ = std::move(document);
  Json* processes = loaded.document_.is_object() && loaded.document_.contains("processes")
                        ? &loaded.document_["processes"]
                        : nullptr;
  if (processes == nullptr || !processes->is_array()) return loaded;
  for (size_t i = 0; i < processes->size(); ++i) {
    Json* rows = RowsArray(*processes, i);
    if (rows == nullptr || rows->empty()) continue;
    StepRowColumns& columns = loaded.step_rows_[i];
    for (Json& row : *rows) columns.Append(std::move(row));
    *rows = Json::array();
  }
  return loaded;
}

const StepRowColumns& LoadedReport::StepRows(size_t process_index) const {
  static const StepRowColumns kNoRows;
  const auto found = step_rows_.find(process_index);
  return found == step_rows_.end() ? kNoRows : found->second;
}

Json LoadedReport::TakeDocumentWithRows() && {
  for (auto& [index, columns] : step_rows_) {
    Json* rows = RowsArray(document_["processes"], index);
    for (size_t i = 0; i < columns.size(); ++i) rows->push_back(columns.Row(i));
    columns.Clear();
  }
  step_rows_.clear();
  return std::move(document_);
}

StatusOr<LoadedReport> LoadReport(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return DataLossError("cannot read report " + Quoted(path) + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || S_ISDIR(info.st_mode)) {
    const int error = S_ISDIR(info.st_mode) ? EISDIR : errno;
    ::close(fd);
    return DataLossError("cannot read report " + Quoted(path) + ": " + std::strerror(error));
  }
  LoadedReport loaded;
  ReportFileBuffer buffer(fd);
  std::istream stream(&buffer);
  ReportSax sax(&loaded.document_, &loaded.step_rows_);
  const bool parsed = Json::sax_parse(stream, &sax, Json::input_format_t::json, /*strict=*/true,
                                      /*ignore_comments=*/false);
  ::close(fd);
  if (buffer.error() != 0) {
    return DataLossError("cannot read report " + Quoted(path) + ": " +
                         std::strerror(buffer.error()));
  }
  if (buffer.too_large()) {
    return DataLossError("report " + Quoted(path) + " is larger than " +
                         std::to_string(kMaxReportBytes >> 20) + " MiB; not read");
  }
  if (sax.too_deep()) {
    return DataLossError("report " + Quoted(path) + " is nested deeper than " +
                         std::to_string(kMaxReportDepth) + " levels; not a gpuattr report");
  }
  if (!parsed) {
    return DataLossError("report " + Quoted(path) +
                         " is not JSON (a report is the file `gpuattr run -o` writes)");
  }
  GPUATTR_RETURN_IF_ERROR(CheckSchema(loaded.document_, path));
  return loaded;
}

const Json& Field(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

bool IsCount(const Json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

}  // namespace gpuattr::collector
