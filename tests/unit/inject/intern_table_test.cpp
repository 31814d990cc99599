#include "runtime/intern_table.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

TEST_CASE("a string interns to one stable id, distinct strings to distinct ids", "[intern]") {
  auto table = std::make_unique<StringTable>();
  const uint32_t a = table->Intern("forward");
  const uint32_t b = table->Intern("backward");
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(a != b);
  CHECK(table->Intern(std::string("forward")) == a);
  CHECK(table->Find("backward") == b);
  CHECK(table->Find("optimizer") == 0);
  REQUIRE(table->size() == 2);
  CHECK(table->Get(a) == "forward");
  CHECK(table->Get(b) == "backward");
}

TEST_CASE("an over-long string is truncated to the wire limit", "[intern]") {
  auto table = std::make_unique<StringTable>();
  const std::string longer(wire::kMaxStringBytes + 100, 'x');
  const uint32_t id = table->Intern(longer);
  REQUIRE(id != 0);
  CHECK(table->Get(id).size() == wire::kMaxStringBytes);
  CHECK(table->Intern(longer.substr(0, wire::kMaxStringBytes)) == id);
}

TEST_CASE("a full string table returns 0 and counts the failure", "[intern]") {
  auto table = std::make_unique<StringTable>();
  for (uint32_t i = 0; i < StringTable::kMaxEntries; ++i) {
    REQUIRE(table->Intern("s" + std::to_string(i)) == i + 1);
  }
  CHECK(table->Intern("one too many") == 0);
  CHECK(table->full_count() == 1);
  CHECK(table->Intern("s17") == 18);  // known strings are still found
}

TEST_CASE("path nodes: same key same id, other parent or domain other id", "[intern]") {
  auto table = std::make_unique<PathTable>();
  const uint32_t root = table->Intern(PathKey{0, 5, 0});
  const uint32_t child = table->Intern(PathKey{root, 6, 0});
  CHECK(root != 0);
  CHECK(child != root);
  CHECK(table->Intern(PathKey{0, 5, 0}) == root);
  CHECK(table->Intern(PathKey{root, 6, 0}) == child);
  CHECK(table->Intern(PathKey{0, 5, 9}) != root);      // same name, other domain
  CHECK(table->Intern(PathKey{child, 5, 0}) != root);  // same name, other parent
  CHECK(table->Get(child).parent == root);
  CHECK(table->Get(child).name == 6);
  CHECK(table->size() == 4);
}

TEST_CASE("concurrent interning from several threads agrees on every id", "[intern]") {
  auto strings = std::make_unique<StringTable>();
  auto paths = std::make_unique<PathTable>();
  constexpr int kThreads = 4;
  constexpr uint32_t kNames = 500;
  std::vector<std::vector<uint32_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the names in a different order.
      for (uint32_t k = 0; k < kNames; ++k) {
        const uint32_t i = (k * (2 * t + 1) + static_cast<uint32_t>(t) * 37) % kNames;
        const uint32_t name = strings->Intern("range" + std::to_string(i));
        const uint32_t node = paths->Intern(PathKey{0, name, 0});
        const uint32_t child = paths->Intern(PathKey{node, name, 1});
        seen[t].push_back(i);
        seen[t].push_back(name);
        seen[t].push_back(child);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(strings->size() == kNames);
  CHECK(paths->size() == 2 * kNames);
  for (int t = 0; t < kThreads; ++t) {
    for (size_t k = 0; k < seen[t].size(); k += 3) {
      const uint32_t i = seen[t][k];
      const uint32_t name = seen[t][k + 1];
      CHECK(strings->Find("range" + std::to_string(i)) == name);
      const uint32_t node = paths->Find(PathKey{0, name, 0});
      CHECK(paths->Find(PathKey{node, name, 1}) == seen[t][k + 2]);
    }
  }
}

}  // namespace
}  // namespace gpuattr::inject
