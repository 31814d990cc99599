#include "cupti_client_check.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace gpuattr::test_support {

void CheckCuptiClientRecords(const nlohmann::json& process) {
  REQUIRE(process.contains("cupti_client"));
  const nlohmann::json& client = process["cupti_client"];
  CHECK(client["subscribe_result"] == 0);
  std::set<uint32_t> while_on;
  for (const nlohmann::json& id : client["launched_while_on"]) while_on.insert(id.get<uint32_t>());
  // A graph launch's nodes share its correlation id: an activity is its id, kind and name, and
  // each expected one is matched once.
  using Key = std::tuple<uint32_t, std::string, std::string>;
  std::multimap<Key, nlohmann::json> expected;
  for (const nlohmann::json& activity : process["activities"]) {
    if (activity["correlation_id"].is_number() &&
        while_on.count(activity["correlation_id"].get<uint32_t>()) == 1) {
      expected.emplace(
          Key{activity["correlation_id"].get<uint32_t>(), activity["kind"], activity["name"]},
          activity);
    }
  }
  REQUIRE_FALSE(expected.empty());
  CHECK(client["records"].size() == expected.size());
  const auto ns = [](const nlohmann::json& value) { return value.get<int64_t>(); };
  std::map<uint64_t, std::set<int64_t>> offsets_by_buffer;
  for (const nlohmann::json& record : client["records"]) {
    INFO(record.dump());
    const Key key{record["correlation_id"].get<uint32_t>(), record["kind"], record["name"]};
    auto match = expected.end();
    for (auto [at, last] = expected.equal_range(key); at != last; ++at) {
      if (ns(at->second["end_ns"]) - ns(at->second["start_ns"]) ==
          ns(record["end_ns"]) - ns(record["start_ns"])) {
        match = at;
        break;
      }
    }
    // Launched while on, of its kind and name, with its exact duration, not yet matched.
    REQUIRE(match != expected.end());
    offsets_by_buffer[record["buffer"].get<uint64_t>()].insert(ns(record["start_ns"]) -
                                                               ns(match->second["start_ns"]));
    expected.erase(match);
  }
  CHECK(expected.empty());
  for (const auto& [buffer, offsets] : offsets_by_buffer) {
    INFO("buffer " << buffer);
    CHECK(offsets.size() == 1);
  }
}

}  // namespace gpuattr::test_support
