// StepRowColumns (step_row_columns.h): a kind byte and 8 bytes per cell, in blocks of kBlockRows
// allocated when a cell of theirs is first set; names interned; everything else aside as JSON.
#include "report/step_row_columns.h"

#include <array>
#include <bit>
#include <deque>
#include <iterator>
#include <unordered_map>
#include <utility>
#include <vector>

#include "report/report_json.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

constexpr size_t kFixedColumns = 4;  // index, name, start_ns, end_ns
constexpr size_t kColumnCount =
    kFixedColumns + std::size(kStepTerms) + 1 + std::size(kStepWorkTerms);

constexpr std::array<std::string_view, kColumnCount> ColumnKeys() {
  std::array<std::string_view, kColumnCount> keys{"index", "name", "start_ns", "end_ns"};
  size_t next = kFixedColumns;
  for (const char* term : kStepTerms) keys[next++] = term;
  keys[next++] = "recompute_fraction";
  for (const char* term : kStepWorkTerms) keys[next++] = term;
  return keys;
}

constexpr std::array<std::string_view, kColumnCount> kColumnKeys = ColumnKeys();

// What a cell holds. kAside: a value of another type (object, array), kept in Storage::aside.
enum class CellKind : uint8_t {
  kAbsent,
  kNull,
  kFalse,
  kTrue,
  kUnsigned,
  kInteger,
  kFloat,
  kString,
  kAside
};

}  // namespace

struct StepRowColumns::Storage {
  struct Block {
    std::array<CellKind, kBlockRows> kinds{};  // kAbsent
    std::array<uint64_t, kBlockRows> bits{};
  };
  struct Column {
    std::vector<std::unique_ptr<Block>> blocks;  // null: no cell of that block is set
  };

  std::array<Column, kColumnCount> columns;
  std::deque<std::string> strings;  // stable addresses for the views in string_ids
  std::unordered_map<std::string_view, uint32_t> string_ids;
  // Per row with any: an object of the members not in the columns, or the whole row when it is
  // not an object.
  std::unordered_map<size_t, Json> aside;

  std::pair<CellKind, uint64_t> Cell(size_t row, size_t column) const {
    const std::vector<std::unique_ptr<Block>>& blocks = columns[column].blocks;
    const size_t block = row / kBlockRows;
    if (block >= blocks.size() || blocks[block] == nullptr) return {CellKind::kAbsent, 0};
    return {blocks[block]->kinds[row % kBlockRows], blocks[block]->bits[row % kBlockRows]};
  }

  void SetCell(size_t row, size_t column, CellKind kind, uint64_t bits) {
    std::vector<std::unique_ptr<Block>>& blocks = columns[column].blocks;
    const size_t block = row / kBlockRows;
    if (block >= blocks.size()) blocks.resize(block + 1);
    if (blocks[block] == nullptr) blocks[block] = std::make_unique<Block>();
    blocks[block]->kinds[row % kBlockRows] = kind;
    blocks[block]->bits[row % kBlockRows] = bits;
  }

  uint32_t StringId(std::string text) {
    const auto found = string_ids.find(text);
    if (found != string_ids.end()) return found->second;
    const auto id = static_cast<uint32_t>(strings.size());
    strings.push_back(std::move(text));
    string_ids.emplace(strings.back(), id);
    return id;
  }

  // The cell for `value`, or kAside when it has no cell.
  std::pair<CellKind, uint64_t> CellFor(Json& value) {
    switch (value.type()) {
      case Json::value_t::null:
        return {CellKind::kNull, 0};
      case Json::value_t::boolean:
        return {value.get<bool>() ? CellKind::kTrue : CellKind::kFalse, 0};
      case Json::value_t::number_unsigned:
        return {CellKind::kUnsigned, value.get<uint64_t>()};
      case Json::value_t::number_integer:
        return {CellKind::kInteger, std::bit_cast<uint64_t>(value.get<int64_t>())};
      case Json::value_t::number_float:
        return {CellKind::kFloat, std::bit_cast<uint64_t>(value.get<double>())};
      case Json::value_t::string:
        return {CellKind::kString, StringId(std::move(value.get_ref<std::string&>()))};
      default:
        return {CellKind::kAside, 0};
    }
  }

  Json Value(size_t row, size_t column) const {
    const auto [kind, bits] = Cell(row, column);
    switch (kind) {
      case CellKind::kAbsent:
      case CellKind::kNull:
        return nullptr;
      case CellKind::kFalse:
        return false;
      case CellKind::kTrue:
        return true;
      case CellKind::kUnsigned:
        return bits;
      case CellKind::kInteger:
        return std::bit_cast<int64_t>(bits);
      case CellKind::kFloat:
        return std::bit_cast<double>(bits);
      case CellKind::kString:
        return strings[bits];
      case CellKind::kAside: {
        const auto members = aside.find(row);
        if (members == aside.end()) break;
        const auto member = members->second.find(kColumnKeys[column]);
        if (member != members->second.end()) return *member;
        break;
      }
    }
    return nullptr;
  }
};

StepRowColumns::StepRowColumns() = default;
StepRowColumns::~StepRowColumns() = default;
StepRowColumns::StepRowColumns(StepRowColumns&&) noexcept = default;
StepRowColumns& StepRowColumns::operator=(StepRowColumns&&) noexcept = default;

std::optional<size_t> StepRowColumns::ColumnOf(std::string_view key) {
  for (size_t i = 0; i < kColumnCount; ++i) {
    if (kColumnKeys[i] == key) return i;
  }
  return std::nullopt;
}

void StepRowColumns::BeginRow() {
  if (storage_ == nullptr) storage_ = std::make_unique<Storage>();
  ++rows_;
}

void StepRowColumns::SetMember(const std::string& key, Json value) {
  const size_t row = rows_ - 1;
  const std::optional<size_t> column = ColumnOf(key);
  if (!column) {
    storage_->aside[row][key] = std::move(value);
    return;
  }
  const auto [kind, bits] = storage_->CellFor(value);
  const CellKind before = storage_->Cell(row, *column).first;
  if (kind == CellKind::kAside) {
    storage_->aside[row][key] = std::move(value);
  } else if (before == CellKind::kAside) {  // a key met twice: the last value wins
    const auto members = storage_->aside.find(row);
    members->second.erase(key);
    if (members->second.empty()) storage_->aside.erase(members);
  }
  storage_->SetCell(row, *column, kind, bits);
}

void StepRowColumns::Append(Json row) {
  if (!row.is_object()) {
    BeginRow();
    storage_->aside[rows_ - 1] = std::move(row);
    return;
  }
  BeginRow();
  for (auto& [key, value] : row.items()) SetMember(key, std::move(value));
}

void StepRowColumns::Clear() {
  storage_.reset();
  rows_ = 0;
}

Json StepRowColumns::Member(size_t row, size_t column) const {
  if (row >= rows_ || column >= kColumnCount) return nullptr;
  return storage_->Value(row, column);
}

Json StepRowColumns::Member(size_t row, std::string_view key) const {
  if (row >= rows_) return nullptr;
  const std::optional<size_t> column = ColumnOf(key);
  if (column) return storage_->Value(row, *column);
  const auto aside = storage_->aside.find(row);
  if (aside == storage_->aside.end() || !aside->second.is_object()) return nullptr;
  const auto member = aside->second.find(key);
  return member == aside->second.end() ? Json(nullptr) : *member;
}

std::optional<double> StepRowColumns::Number(size_t row, size_t column) const {
  if (row >= rows_ || column >= kColumnCount) return std::nullopt;
  const auto [kind, bits] = storage_->Cell(row, column);
  switch (kind) {
    case CellKind::kUnsigned:
      return static_cast<double>(bits);
    case CellKind::kInteger:
      return static_cast<double>(std::bit_cast<int64_t>(bits));
    case CellKind::kFloat:
      return std::bit_cast<double>(bits);
    default:
      return std::nullopt;
  }
}

Json StepRowColumns::Row(size_t row) const {
  if (row >= rows_) return nullptr;
  const auto aside = storage_->aside.find(row);
  if (aside != storage_->aside.end() && !aside->second.is_object()) return aside->second;
  Json out = Json::object();
  for (size_t column = 0; column < kColumnCount; ++column) {
    const CellKind kind = storage_->Cell(row, column).first;
    if (kind != CellKind::kAbsent && kind != CellKind::kAside) {
      out[std::string(kColumnKeys[column])] = storage_->Value(row, column);
    }
  }
  if (aside != storage_->aside.end()) {
    for (const auto& [key, value] : aside->second.items()) out[key] = value;
  }
  return out;
}

}  // namespace gpuattr::collector
