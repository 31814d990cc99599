#include "analysis/work_fold.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

namespace gpuattr::collector {
namespace {

// "<op> <dtype>" (gpuattr.flops, gpuattr.bytes) or "free <op>" / "unknown <op>" (gpuattr.ops).
void ParseMessage(std::string_view message, bool in_ops_domain, std::string& op, std::string& dtype,
                  bool& free, bool& unknown, bool& malformed) {
  if (in_ops_domain) {
    constexpr std::string_view kFree = "free ";
    constexpr std::string_view kUnknown = "unknown ";
    if (message.substr(0, kFree.size()) == kFree) {
      free = true;
      op = message.substr(kFree.size());
    } else if (message.substr(0, kUnknown.size()) == kUnknown) {
      unknown = true;
      op = message.substr(kUnknown.size());
    } else {
      malformed = true;
    }
    return;
  }
  const size_t space = message.rfind(' ');
  if (space == std::string_view::npos) {
    malformed = true;
    return;
  }
  op = message.substr(0, space);
  dtype = message.substr(space + 1);
}

template <typename Less>
std::vector<OpCount> Sorted(std::map<std::string, OpCount>& by_op, Less less) {
  std::vector<OpCount> out;
  out.reserve(by_op.size());
  for (auto& [op, count] : by_op) out.push_back(std::move(count));
  std::stable_sort(out.begin(), out.end(), less);
  return out;
}

}  // namespace

void WorkFold::Refresh() {
  domains_.clear();
  entry_of_id_.clear();
}

WorkFold::Domain WorkFold::DomainOf(uint32_t domain_string) {
  auto [found, added] = domains_.try_emplace(domain_string, Domain::kOther);
  if (added && domain_string != 0) {
    const std::string name = paths_.Name(domain_string);
    if (name == kFlopsDomain) {
      found->second = Domain::kFlops;
    } else if (name == kBytesDomain) {
      found->second = Domain::kBytes;
    } else if (name == kOpsDomain) {
      found->second = Domain::kOps;
    }
  }
  return found->second;
}

WorkFold::Entry& WorkFold::EntryOf(uint32_t name_string, Domain domain) {
  const bool in_ops_domain = domain == Domain::kOps;
  Entry*& cached = entry_of_id_[{name_string, in_ops_domain}];
  if (cached != nullptr) return *cached;
  std::string message = paths_.Name(name_string);
  auto [found, added] = entries_.try_emplace({std::move(message), in_ops_domain});
  Entry& entry = found->second;
  if (added) {
    ParseMessage(found->first.first, in_ops_domain, entry.op, entry.dtype, entry.free,
                 entry.unknown, entry.malformed);
  }
  cached = &entry;
  return entry;
}

std::optional<WorkCounts> WorkFold::Fold(const wire::ValueMark& mark) {
  const Domain domain = DomainOf(mark.domain_string);
  if (domain == Domain::kOther) {
    ++other_marks_[{mark.name_string, mark.domain_string}];
    return std::nullopt;
  }
  any_ = true;
  Entry& entry = EntryOf(mark.name_string, domain);
  WorkCounts counts;
  if (entry.malformed) return counts;
  switch (domain) {
    case Domain::kFlops:
      ++entry.calls;
      entry.flops += mark.value;
      counts.flops = mark.value;
      break;
    case Domain::kBytes:
      entry.bytes_estimate += mark.value;
      counts.bytes_estimate = mark.value;
      break;
    case Domain::kOps:
      entry.calls += mark.value;
      if (entry.unknown) counts.unknown_ops = mark.value;
      break;
    case Domain::kOther:
      break;
  }
  if (mark.node == 0) unattributed_.Add(counts);
  return counts;
}

void WorkFold::Finish(ProcessAnalysis& analysis) {
  if (!other_marks_.empty()) {
    std::map<std::pair<std::string, std::optional<std::string>>, uint64_t> marks;
    for (const MarkStats& mark : analysis.marks) marks[{mark.name, mark.domain}] += mark.count;
    for (const auto& [key, count] : other_marks_) {
      std::optional<std::string> domain;
      if (key.second != 0) domain = StringOr(data_, key.second);
      marks[{StringOr(data_, key.first), std::move(domain)}] += count;
    }
    analysis.marks.clear();
    for (auto& [key, count] : marks) analysis.marks.push_back({key.first, key.second, count});
  }

  WorkAnalysis work;
  for (const auto& [key, count] : data_.marks) {
    const std::string name = StringOr(data_, key.first);
    if (name.rfind(kCounterMarkPrefix, 0) != 0) continue;
    const std::string_view said = std::string_view(name).substr(std::strlen(kCounterMarkPrefix));
    constexpr std::string_view kOff = "off: ";
    if (said.substr(0, kOff.size()) == kOff) {
      work.off = std::string(said.substr(kOff.size()));
    } else {
      work.counter = std::string(said);
    }
  }
  if (!any_ && !work.counter && !work.off) return;

  std::map<std::string, OpCount> counted;
  std::map<std::string, OpCount> free;
  std::map<std::string, OpCount> unknown;
  std::map<std::string, uint64_t> flops_by_dtype;
  for (const auto& [key, entry] : entries_) {
    if (entry.malformed) continue;
    std::map<std::string, OpCount>& ledger = entry.free ? free : entry.unknown ? unknown : counted;
    OpCount& op = ledger[entry.op];
    op.op = entry.op;
    op.calls += entry.calls;
    op.flops += entry.flops;
    op.bytes_estimate += entry.bytes_estimate;
    if (entry.unknown) {
      work.total.unknown_ops += entry.calls;
    } else if (!entry.free) {
      work.total.flops += entry.flops;
      work.total.bytes_estimate += entry.bytes_estimate;
      flops_by_dtype[entry.dtype] += entry.flops;
    }
  }
  auto by_calls = [](const OpCount& a, const OpCount& b) { return a.calls > b.calls; };
  work.counted = Sorted(counted, [](const OpCount& a, const OpCount& b) {
    return a.flops != b.flops ? a.flops > b.flops : a.calls > b.calls;
  });
  work.free = Sorted(free, by_calls);
  work.unknown = Sorted(unknown, by_calls);
  work.flops_by_dtype.assign(flops_by_dtype.begin(), flops_by_dtype.end());
  std::stable_sort(work.flops_by_dtype.begin(), work.flops_by_dtype.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  work.unattributed = unattributed_;
  analysis.work = std::move(work);
}

}  // namespace gpuattr::collector
