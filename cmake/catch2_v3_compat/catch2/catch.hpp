// Catch2 v2's single header, spelled for Catch2 v3 (Debian 13 ships v3, Debian 12 v2): the tests
// include <catch2/catch.hpp> and use v2's names, and this header, on the include path only when
// CMake found Catch2 v3 (cmake/GpuattrHelpers.cmake), maps those names onto v3's. The main()
// is v3's Catch2::Catch2WithMain.
#ifndef GPUATTR_CMAKE_CATCH2_V3_COMPAT_CATCH2_CATCH_HPP_
#define GPUATTR_CMAKE_CATCH2_V3_COMPAT_CATCH2_CATCH_HPP_

#include <catch2/catch_all.hpp>
#include <string>

using Catch::Approx;  // v2 has it in the global namespace

namespace Catch {

// v2's string matchers lived in namespace Catch too; v3 renamed Contains to ContainsSubstring
// (its Contains is a range matcher).
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, sensitivity);
}
using Matchers::EndsWith;
using Matchers::Equals;
using Matchers::Matches;
using Matchers::StartsWith;

}  // namespace Catch

#endif  // GPUATTR_CMAKE_CATCH2_V3_COMPAT_CATCH2_CATCH_HPP_
