// The fake libcupti.so.13 at the link level and its stateless record walk, checked the way a
// client sees them: through dlopen.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "fake_cupti_client.h"
#include "subprocess.h"

namespace {

using gpuattr::simgpu::testing::FakeCupti;

using gpuattr::simgpu::testing::Fake;

// A command's stdout.
std::string Run(const std::vector<std::string>& argv) {
  return gpuattr::test_support::RunProcess(argv).out;
}

// A hand-made buffer of records: each record starts with its kind, the rest is zero.
struct Buffer {
  alignas(8) uint8_t bytes[1024] = {};
  size_t used = 0;
  uint8_t* Add(uint32_t kind, size_t size) {
    uint8_t* at = bytes + used;
    std::memcpy(at, &kind, sizeof(kind));
    used += size;
    return at;
  }
};

}  // namespace

TEST_CASE("the fake has SONAME libcupti.so.13 and versions every export", "[simgpu][link]") {
  const std::string dynamic = Run({"readelf", "-d", SIMGPU_FAKE_CUPTI_PATH});
  CHECK(dynamic.find("Library soname: [libcupti.so.13]") != std::string::npos);
  const std::string symbols = Run({"readelf", "--dyn-syms", "-W", SIMGPU_FAKE_CUPTI_PATH});
  size_t exported = 0;
  size_t line_start = 0;
  while (line_start < symbols.size()) {
    const size_t end = symbols.find('\n', line_start);
    const std::string line = symbols.substr(line_start, end - line_start);
    line_start = end == std::string::npos ? symbols.size() : end + 1;
    // Defined global symbols; the ABS one is the version node's own definition.
    if (line.find(" GLOBAL ") == std::string::npos || line.find(" UND ") != std::string::npos ||
        line.find(" ABS ") != std::string::npos) {
      continue;
    }
    ++exported;
    INFO(line);
    CHECK(line.find("@@libcupti.so.13") != std::string::npos);
  }
  CHECK(exported > 30);
  void* handle = Fake().handle;
  CHECK(dlvsym(handle, "cuptiSubscribe", "libcupti.so.13") != nullptr);
  CHECK(dlvsym(handle, "cuptiActivityGetNextRecord", "libcupti.so.13") != nullptr);
  CHECK(dlvsym(handle, "simgpu_api_enter", "libcupti.so.13") != nullptr);
}

TEST_CASE("cuptiGetVersion, result strings and callback names match the 13.0 library", "[simgpu]") {
  FakeCupti& f = Fake();
  uint32_t version = 0;
  REQUIRE(f.cuptiGetVersion(&version) == CUPTI_SUCCESS);
  CHECK(version == 130001);
  const char* text = nullptr;
  REQUIRE(f.cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &text) == CUPTI_SUCCESS);
  CHECK(std::string(text) == "CUPTI_ERROR_UNKNOWN");
  const char* name = nullptr;
  REQUIRE(f.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 505, &name) == CUPTI_SUCCESS);
  CHECK(std::string(name) == "__cudaLaunchKernel_v13000");
  REQUIRE(f.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                 &name) == CUPTI_SUCCESS);
  CHECK(std::string(name) == "cuLaunchKernel");
  CHECK(f.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RESOURCE, 1, &name) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(f.cuptiGetLastError() == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(f.cuptiGetLastError() == CUPTI_SUCCESS);
}

TEST_CASE("cuptiActivityGetNextRecord is stateless and walks records by their kind's size",
          "[simgpu][records]") {
  FakeCupti& f = Fake();
  Buffer b;
  uint8_t* kernel = b.Add(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 216);
  uint8_t* memcpy_record = b.Add(CUPTI_ACTIVITY_KIND_MEMCPY, 96);
  uint8_t* memset_record = b.Add(CUPTI_ACTIVITY_KIND_MEMSET, 88);
  uint8_t* api = b.Add(CUPTI_ACTIVITY_KIND_RUNTIME, 40);

  CUpti_Activity* record = nullptr;
  REQUIRE(f.cuptiActivityGetNextRecord(b.bytes, b.used, &record) == CUPTI_SUCCESS);
  CHECK(reinterpret_cast<uint8_t*>(record) == kernel);
  SECTION("NULL yields the first record every time") {
    record = nullptr;
    REQUIRE(f.cuptiActivityGetNextRecord(b.bytes, b.used, &record) == CUPTI_SUCCESS);
    CHECK(reinterpret_cast<uint8_t*>(record) == kernel);
  }
  SECTION("the walk visits every record, then reports the end without moving") {
    std::vector<uint8_t*> seen = {reinterpret_cast<uint8_t*>(record)};
    while (f.cuptiActivityGetNextRecord(b.bytes, b.used, &record) == CUPTI_SUCCESS) {
      seen.push_back(reinterpret_cast<uint8_t*>(record));
    }
    CHECK(seen == std::vector<uint8_t*>{kernel, memcpy_record, memset_record, api});
    CHECK(reinterpret_cast<uint8_t*>(record) == api);
    CHECK(f.cuptiActivityGetNextRecord(b.bytes, b.used, &record) == CUPTI_ERROR_MAX_LIMIT_REACHED);
  }
  SECTION("a truncated last record is the end") {
    record = reinterpret_cast<CUpti_Activity*>(memset_record);
    CHECK(f.cuptiActivityGetNextRecord(b.bytes, b.used - 1, &record) ==
          CUPTI_ERROR_MAX_LIMIT_REACHED);
    CHECK(reinterpret_cast<uint8_t*>(record) == memset_record);
  }
  SECTION("validSize 0 has no record") {
    record = nullptr;
    CHECK(f.cuptiActivityGetNextRecord(b.bytes, 0, &record) == CUPTI_ERROR_MAX_LIMIT_REACHED);
    CHECK(record == nullptr);
  }
}

TEST_CASE("cuptiActivityGetNextRecord rejects kind 0, legacy and unknown kinds", "[simgpu]") {
  FakeCupti& f = Fake();
  for (uint32_t kind : {0u, 6u, 14u, 21u, 30u, 41u, 56u, 1000u}) {
    Buffer b;
    b.Add(kind, 64);
    CUpti_Activity* record = nullptr;
    INFO("kind " << kind);
    CHECK(f.cuptiActivityGetNextRecord(b.bytes, b.used, &record) == CUPTI_ERROR_INVALID_KIND);
    CHECK(record == nullptr);
  }
}

TEST_CASE("a second subscriber gets 39 and the holder's name until the first unsubscribes",
          "[simgpu][subscribe]") {
  FakeCupti& f = Fake();
  auto callback = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
  CUpti_SubscriberParams first{};
  first.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  first.subscriberName = "gpuattr-test";
  CUpti_SubscriberHandle a = nullptr;
  REQUIRE(f.cuptiSubscribe_v2(&a, callback, nullptr, &first) == CUPTI_SUCCESS);

  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams second{};
  second.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  second.subscriberName = "second";
  second.oldSubscriberName = old_name;
  second.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle b = nullptr;
  CHECK(f.cuptiSubscribe_v2(&b, callback, nullptr, &second) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(old_name) == "gpuattr-test");
  CHECK(f.cuptiSubscribe(&b, callback, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

  REQUIRE(f.cuptiUnsubscribe(a) == CUPTI_SUCCESS);
  CHECK(f.cuptiEnableCallback(1, a, CUPTI_CB_DOMAIN_RUNTIME_API, 505) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(f.cuptiSubscribe_v2(&b, callback, nullptr, &second) == CUPTI_SUCCESS);
  CHECK(b != nullptr);
  CHECK(f.cuptiUnsubscribe(b) == CUPTI_SUCCESS);
}
