#include "import/imported_trace.h"

namespace gpuattr::collector {

uint32_t StringTable::Intern(std::string_view text) {
  if (auto known = ids_.find(text); known != ids_.end()) return known->second;
  texts_.emplace_back(text);
  const auto id = static_cast<uint32_t>(texts_.size());
  ids_.emplace(texts_.back(), id);
  return id;
}

}  // namespace gpuattr::collector
