// The callback-id tables against the installed CUPTI headers (issue 21): every runtime or driver
// callback id whose API launches device work, launches a graph or copies or sets memory
// (`*Launch*`, `*Memcpy*`, `*Memset*` in its enum name) is enabled with a role, or named below with
// the reason it is not. A later CUDA that adds such an API fails here instead of leaving its
// kernels `launch_not_seen`.
#include "cupti/cbid_table.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace gpuattr::inject {
namespace {

// Enum name (without its CUPTI_*_TRACE_CBID_ prefix) -> value, for the names matching
// `interesting`, read from the header's `CUPTI_..._TRACE_CBID_NAME = VALUE,` lines.
std::map<std::string, uint32_t> IdsInHeader(const std::string& path, const std::string& prefix,
                                            const std::regex& interesting) {
  std::ifstream file(path);
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  const std::string content = text.str();
  const std::regex entry(prefix + R"(([A-Za-z0-9_]+)\s*=\s*([0-9]+))");
  std::map<std::string, uint32_t> ids;
  for (auto it = std::sregex_iterator(content.begin(), content.end(), entry);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (std::regex_search(name, interesting)) ids[name] = std::stoul((*it)[2]);
  }
  return ids;
}

const std::regex kDeviceWork("Launch|Memcpy|Memset");

// The names among those that start no device work themselves, each with the reason:
// - a host function (cudaLaunchHostFunc, cuLaunchHostFunc) runs on the host: CUPTI records no
//   device activity for it;
// - building or editing a graph's memcpy and memset nodes (cudaGraphAdd*Node, *NodeSetParams,
//   *NodeGetParams) only describes work, which runs, and is attributed, at the graph's launch;
// - the driver's cu64Memcpy* / cu64Memset* ids are CUDA 3's 64-bit variants: neither cuda.h nor
//   libcuda has had such an entry point since, so nothing can call them.
bool StartsNoDeviceWork(const std::string& name) {
  static const std::regex kNotDeviceWork(
      "LaunchHostFunc|^cu64Mem|^cu(da)?Graph(Add|Exec)?Mem(cpy|set)Node|NodeSetParams|"
      "NodeGetParams");
  return std::regex_search(name, kNotDeviceWork) && name.find("GraphLaunch") == std::string::npos;
}

TEST_CASE("every launch, memcpy and memset callback id of the installed headers has a role",
          "[unit][cbid]") {
  const auto runtime =
      IdsInHeader(GPUATTR_CUPTI_RUNTIME_CBID_H, "CUPTI_RUNTIME_TRACE_CBID_", kDeviceWork);
  const auto driver =
      IdsInHeader(GPUATTR_CUPTI_DRIVER_CBID_H, "CUPTI_DRIVER_TRACE_CBID_", kDeviceWork);
  // The headers really were read: CUDA 13's own launch ids are among them.
  REQUIRE(runtime.count("__cudaLaunchKernel_v13000") == 1);
  REQUIRE(driver.count("cuLaunchKernel") == 1);
  size_t enabled = 0;
  for (const auto& [name, id] : runtime) {
    INFO("runtime " << name << " = " << id);
    CHECK((RuntimeRole(id) != CbidRole::kNone) == !StartsNoDeviceWork(name));
    enabled += RuntimeRole(id) != CbidRole::kNone;
  }
  for (const auto& [name, id] : driver) {
    INFO("driver " << name << " = " << id);
    CHECK((DriverRole(id) != CbidRole::kNone) == !StartsNoDeviceWork(name));
    enabled += DriverRole(id) != CbidRole::kNone;
  }
  // The exclusions are narrow: most such ids are enabled.
  CHECK(enabled > (runtime.size() + driver.size()) / 2);
}

TEST_CASE("launch callback ids have the kernel or graph role by name", "[unit][cbid]") {
  const auto runtime =
      IdsInHeader(GPUATTR_CUPTI_RUNTIME_CBID_H, "CUPTI_RUNTIME_TRACE_CBID_", std::regex("Launch"));
  for (const auto& [name, id] : runtime) {
    if (name.find("HostFunc") != std::string::npos) continue;
    INFO(name);
    CHECK(RuntimeRole(id) ==
          (name.find("GraphLaunch") != std::string::npos ? CbidRole::kGraph : CbidRole::kKernel));
  }
}

}  // namespace
}  // namespace gpuattr::inject
