#include "import/imported_trace.h"

namespace gpuattr::collector {

uint32_t StringTable::Intern(std::string_view text) {
  if (auto known = ids_.find(text); known != ids_.end()) return known->second;
  texts_.emplace_back(text);
  const auto id = static_cast<uint32_t>(texts_.size());
  ids_.emplace(texts_.back(), id);
  return id;
}

void ImportedTrace::CountUnused(std::string_view category) {
  if (category.empty()) category = kNoCategory;
  if (category.size() > kMaxCategoryBytes) category = kOtherCategories;
  if (auto known = unused_events.find(category); known != unused_events.end()) {
    ++known->second;
  } else if (unused_events.size() < kMaxUnusedCategories) {
    unused_events.emplace(category, 1);
  } else {
    ++unused_events[kOtherCategories];
  }
}

}  // namespace gpuattr::collector
