// Kernel names: demangling, and the family a demangled name belongs to (docs/attribution.md
// §Kernel families).
//
// A FamilyRules table (ordered {match, family, category} rules, data:
// collector/data/family_rules.json or --family-rules FILE) is tried first; the first rule whose
// ECMAScript regex matches anywhere in the demangled name names the family, with $1..$9 replaced
// by its groups, and says whether such kernels are collectives (category communication). With no
// rule matching, the family is the default normalisation: the qualified name with template
// arguments, parameter lists, anonymous namespaces and the return type stripped
// (`void at::native::(anonymous namespace)::k<float, 4>(float*, int)` is `at::native::k`).
// FamilyRules is immutable after parsing; any thread may use one concurrently.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_
#define GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_

#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

// abi::__cxa_demangle of an Itanium-mangled name, C++23 half and bfloat16 types (ROCm, cuDNN)
// included; a name it cannot demangle, or not mangled, is returned as is.
std::string DemangleKernelName(std::string_view name);

// The default normalisation of a demangled (or never mangled) kernel name.
std::string KernelFamily(std::string_view demangled);

class FamilyRules {
 public:
  // {"rules": [{"match": REGEX, "family": FORMAT, "note": TEXT (optional), "category":
  // "compute" (the default) or "communication" (optional)}, ...]}.
  static StatusOr<FamilyRules> Parse(std::string_view json_text, const std::string& origin);
  static StatusOr<FamilyRules> Load(const std::string& path);
  // The built-in table; parsed once (a unit test proves it parses).
  static const FamilyRules& Default();

  // The family of a demangled name: the first matching rule, else KernelFamily(demangled).
  std::string FamilyOf(std::string_view demangled) const;
  // The family and whether its rule says the kernel is a collective (category
  // "communication": the `communication` phase term, docs/attribution.md §Phases).
  struct KernelClass {
    std::string family;
    bool communication = false;
  };
  KernelClass ClassOf(std::string_view demangled) const;
  size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::regex match;
    std::string family;
    bool communication = false;
  };
  std::vector<Rule> rules_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_
