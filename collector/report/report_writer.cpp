// SerializeReport, WriteReportAtomically and WriteReport (report_writer.h): the report's text,
// written the way nlohmann's dump(2) writes a DOM (JsonTextWriter, json_text.h), with each
// process's step rows rendered in place one at a time.
#include "report/report_writer.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"
#include "report/atomic_write.h"
#include "report/json_text.h"
#include "report/report_json.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;
using RowSource = StepRowSource;

// Pretty-prints a document (or one process entry) as dump(2) would, except that at a process's
// steps.rows (an empty array there) it writes that process's rows from their source, one row's
// DOM at a time. Only the containers on the way to a rows array are walked here; every other
// value goes to the JsonTextWriter whole.
class ReportTextWriter {
 public:
  // A document, the rows of processes[i] from `rows_of(i)`.
  ReportTextWriter(JsonTextWriter* text, const Json& document,
                   const std::function<RowSource(size_t)>& rows_of)
      : layout_(*text) {
    const Json* processes = Member(document, "processes");
    if (processes == nullptr || !processes->is_array()) return;
    for (size_t i = 0; i < processes->size(); ++i) {
      if (AddRows((*processes)[i], rows_of(i))) on_the_way_.insert({&document, processes});
    }
  }
  // One process entry and its rows.
  ReportTextWriter(JsonTextWriter* text, const Json& process, RowSource rows) : layout_(*text) {
    AddRows(process, std::move(rows));
  }

  void Write(const Json& value, unsigned indent) {
    const auto rows = rows_at_.find(&value);
    if (rows != rows_at_.end()) {
      WriteRows(rows->second, indent);
    } else if (on_the_way_.count(&value) == 0) {
      layout_.Value(value, indent);
    } else if (value.is_object()) {
      layout_.Raw("{\n");
      size_t written = 0;
      for (auto member = value.begin(); member != value.end(); ++member) {
        if (written++ > 0) layout_.Raw(",\n");
        layout_.Indent(indent + kIndentStep);
        layout_.Key(member.key());
        Write(member.value(), indent + kIndentStep);
      }
      Close('}', indent);
    } else {  // an array: `processes`
      WriteArray(value.size(), indent, [&](size_t i, unsigned inner) { Write(value[i], inner); });
    }
  }

 private:
  static constexpr unsigned kIndentStep = JsonTextWriter::kIndentStep;

  static const Json* Member(const Json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    const auto found = object.find(key);
    return found == object.end() ? nullptr : &*found;
  }

  // Whether `process` has an empty steps.rows that `source` fills: then it is written from it.
  bool AddRows(const Json& process, RowSource source) {
    const Json* steps = Member(process, "steps");
    const Json* rows = steps == nullptr ? nullptr : Member(*steps, "rows");
    if (rows == nullptr || !rows->is_array() || !rows->empty() || source.count == 0) return false;
    rows_at_[rows] = std::move(source);
    on_the_way_.insert({&process, steps});
    return true;
  }

  void WriteRows(const RowSource& rows, unsigned indent) {
    WriteArray(rows.count, indent,
               [&](size_t i, unsigned inner) { layout_.Value(rows.row(i), inner); });
  }

  // A non-empty array as dump(2) lays it out; write_element(i, indent) writes element i.
  template <typename WriteElement>
  void WriteArray(size_t count, unsigned indent, const WriteElement& write_element) {
    layout_.Raw("[\n");
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) layout_.Raw(",\n");
      layout_.Indent(indent + kIndentStep);
      write_element(i, indent + kIndentStep);
    }
    Close(']', indent);
  }

  void Close(char bracket, unsigned indent) {
    layout_.Raw('\n');
    layout_.Indent(indent);
    layout_.Raw(bracket);
  }

  JsonTextWriter& layout_;
  std::unordered_map<const Json*, RowSource> rows_at_;
  std::set<const Json*> on_the_way_;
};

void WriteDocumentText(const Json& document, const std::function<RowSource(size_t)>& rows_of,
                       JsonTextWriter* text) {
  ReportTextWriter writer(text, document, rows_of);
  writer.Write(document, 0);
  text->Raw('\n');
  text->Flush();
}

void WriteReportText(const Report& report, JsonTextWriter* text) {
  WriteDocumentText(
      report.without_step_rows,
      [&report](size_t process) {
        if (process >= report.step_rows.size() || report.step_rows[process].rows == nullptr) {
          return RowSource{};
        }
        const StepRowTable& table = report.step_rows[process];
        return RowSource{table.rows->size(), [&table](size_t i) {
                           return StepRowJson((*table.rows)[i], table.device_measured,
                                              table.work_counted);
                         }};
      },
      text);
}

// Where a report's text goes: an AtomicTextFile, published by Commit, or standard output.
class Destination {
 public:
  static StatusOr<Destination> Open(const std::string& path, ExistingFile existing) {
    if (path.empty()) return InvalidArgumentError("the report path is empty");
    if (path == "-") return Destination(std::nullopt);
    GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile file, AtomicTextFile::Create(path, existing));
    return Destination(std::move(file));
  }

  void Append(const std::string& text) {
    if (file_) {
      file_->Append(text);
    } else {
      stdout_written_ =
          stdout_written_ && std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    }
  }
  Status Commit() {
    if (file_) return file_->Commit();
    if (std::fflush(stdout) != 0 || !stdout_written_) {
      return UnavailableError(std::string("cannot write the report to standard output: ") +
                              std::strerror(errno));
    }
    return Status::Ok();
  }

 private:
  explicit Destination(std::optional<AtomicTextFile> file) : file_(std::move(file)) {}
  std::optional<AtomicTextFile> file_;  // empty: standard output
  bool stdout_written_ = true;
};

Status WriteReportTo(const Report& report, Destination destination) {
  JsonTextWriter text([&destination](const std::string& piece) { destination.Append(piece); });
  WriteReportText(report, &text);
  return destination.Commit();
}

}  // namespace

std::string SerializeReport(const Report& report) {
  std::string whole;
  JsonTextWriter text([&whole](const std::string& piece) { whole += piece; });
  WriteReportText(report, &text);
  return whole;
}

Status WriteReportAtomically(const Report& report, const std::string& path, ExistingFile existing) {
  if (path == "-") return InvalidArgumentError("the report path \"-\" names no file here");
  GPUATTR_ASSIGN_OR_RETURN(Destination destination, Destination::Open(path, existing));
  return WriteReportTo(report, std::move(destination));
}

Status WriteReport(const Report& report, const std::string& path, ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(Destination destination, Destination::Open(path, existing));
  return WriteReportTo(report, std::move(destination));
}

StepRowSource LoadedStepRows(const LoadedReport& report, size_t process) {
  const StepRowColumns& rows = report.StepRows(process);
  return StepRowSource{rows.size(), [&rows](size_t i) { return rows.Row(i); }};
}

Status WriteLoadedReport(const LoadedReport& report, const std::string& path,
                         ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(Destination destination, Destination::Open(path, existing));
  WriteLoadedReportText(report, std::nullopt,
                        [&destination](const std::string& piece) { destination.Append(piece); });
  return destination.Commit();
}

void WriteLoadedReportText(const LoadedReport& report, const std::optional<uint64_t>& pid,
                           const std::function<void(const std::string&)>& out) {
  JsonTextWriter text(out);
  const auto rows_of = [&report](size_t process) { return LoadedStepRows(report, process); };
  if (!pid) {
    WriteDocumentText(report.document(), rows_of, &text);
    return;
  }
  // A copy without the other processes (the document holds no rows: it is small), each kept
  // process's rows taken from its index in the file.
  Json document = report.document();
  std::vector<size_t> kept;
  Json processes = Json::array();
  const Json& all = Field(report.document(), "processes");
  for (size_t i = 0; all.is_array() && i < all.size(); ++i) {
    if (Field(all[i], "pid") == Json(*pid)) {  // numerically, whichever integer type it holds
      kept.push_back(i);
      processes.push_back(all[i]);
    }
  }
  document["processes"] = std::move(processes);
  WriteDocumentText(
      document, [&](size_t process) { return rows_of(kept[process]); }, &text);
}

// The streamed report's text: dump(2)'s layout of a top-level object, written member by member.
class StreamedReport::Text {
 public:
  explicit Text(Destination destination)
      : destination_(std::move(destination)),
        layout_([this](const std::string& piece) { destination_.Append(piece); }) {}

  void Raw(const char* text) { layout_.Raw(text); }
  // `"key": ` of a top-level member, after a separator unless it is the first member.
  void Key(const std::string& key) {
    Raw(members_++ == 0 ? "\n  " : ",\n  ");
    layout_.Key(key);
  }
  void Member(const std::string& key, const Json& value) {
    Key(key);
    layout_.Value(value, JsonTextWriter::kIndentStep);
  }
  void Element(const Json& process, RowSource rows, bool first) {
    Raw(first ? "[\n    " : ",\n    ");
    ReportTextWriter(&layout_, process, std::move(rows))
        .Write(process, 2 * JsonTextWriter::kIndentStep);
  }
  Status Commit() {
    layout_.Flush();
    return destination_.Commit();
  }

 private:
  Destination destination_;
  JsonTextWriter layout_;
  size_t members_ = 0;
};

StatusOr<std::unique_ptr<StreamedReport>> StreamedReport::Open(const std::string& path,
                                                               ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(Destination destination, Destination::Open(path, existing));
  return std::unique_ptr<StreamedReport>(
      new StreamedReport(std::make_unique<Text>(std::move(destination))));
}

StreamedReport::StreamedReport(std::unique_ptr<Text> text) : text_(std::move(text)) {}
StreamedReport::~StreamedReport() = default;

void StreamedReport::Begin(const Json& before) {
  text_->Raw("{");
  for (auto member = before.begin(); member != before.end(); ++member) {
    GPUATTR_DCHECK(member.key() < "processes");
    text_->Member(member.key(), member.value());
  }
  text_->Key("processes");
}

void StreamedReport::AddProcess(const Json& process, StepRowSource rows) {
  text_->Element(process, std::move(rows), processes_++ == 0);
}

Status StreamedReport::Finish(const Json& after) {
  text_->Raw(processes_ == 0 ? "[]" : "\n  ]");
  for (auto member = after.begin(); member != after.end(); ++member) {
    GPUATTR_DCHECK(member.key() > "processes");
    text_->Member(member.key(), member.value());
  }
  text_->Raw("\n}\n");
  return text_->Commit();
}

}  // namespace gpuattr::collector
