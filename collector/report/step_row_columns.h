// One process's steps.rows read back from a report (report_reader.h), held as columns instead of
// a DOM: a report grows with the run only through its step rows, and a DOM object per row costs
// about 1.4 KB against 460 bytes of text, so `gpuattr report`, `diff` and `gate` of a
// million-step report needed gigabytes. Here a member of one of the writer's keys (kStepTerms,
// index, name, start_ns, end_ns, recompute_fraction, kStepWorkTerms) costs 9 bytes: a kind and 8
// bytes of value, in blocks of kBlockRows, so the columns never hold more than one block of slack.
// A name is stored once per distinct text.
//
// Nothing of the row is lost: a member of another key, or whose value is an object or an array,
// is kept aside as JSON (and costs its DOM), and so is a row that is not an object; Row() gives
// back exactly what the file held (nlohmann's number kinds included). Single-threaded.
#ifndef GPUATTR_COLLECTOR_REPORT_STEP_ROW_COLUMNS_H_
#define GPUATTR_COLLECTOR_REPORT_STEP_ROW_COLUMNS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace gpuattr::collector {

class StepRowColumns {
 public:
  static constexpr size_t kBlockRows = 4096;

  StepRowColumns();
  ~StepRowColumns();
  StepRowColumns(StepRowColumns&&) noexcept;
  StepRowColumns& operator=(StepRowColumns&&) noexcept;

  // The column that holds `key`, or nullopt for a key the writer does not write.
  static std::optional<size_t> ColumnOf(std::string_view key);

  size_t size() const { return rows_; }
  bool empty() const { return rows_ == 0; }

  // Building, in the file's order. A row that is an object: BeginRow, then SetMember for each
  // member as it is read (a key met twice keeps its last value, as a DOM does).
  void BeginRow();
  void SetMember(const std::string& key, nlohmann::json value);
  // A whole row: an object member by member, anything else kept aside whole.
  void Append(nlohmann::json row);
  void Clear();

  // What Field(row, key) (report_reader.h) gives of the row as the file held it: the member, or
  // null when the row has none or is not an object.
  nlohmann::json Member(size_t row, size_t column) const;
  nlohmann::json Member(size_t row, std::string_view key) const;
  // The member as a number, when it is one.
  std::optional<double> Number(size_t row, size_t column) const;
  // The row as the file held it.
  nlohmann::json Row(size_t row) const;

 private:
  struct Storage;
  std::unique_ptr<Storage> storage_;  // allocated with the first row
  size_t rows_ = 0;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_STEP_ROW_COLUMNS_H_
