#include "analysis/kernel_family.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace gpuattr::collector {

std::string DemangleKernelName(std::string_view name) {
  if (name.size() < 2 || name.substr(0, 2) != "_Z") return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return mangled;
  return demangled.get();
}

std::string KernelFamily(std::string_view demangled) {
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  std::string text(demangled);
  for (size_t at = text.find(kAnonymous); at != std::string::npos; at = text.find(kAnonymous)) {
    text.erase(at, kAnonymous.size());
  }
  // Drop everything inside <...> and (...) at any depth. `operator<` and friends would unbalance
  // this; kernels cannot be operators, and an unbalanced name only loses its tail.
  std::string out;
  int angle = 0;
  int paren = 0;
  for (char c : text) {
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == '(' && angle == 0) {
      ++paren;
    } else if (c == ')' && paren > 0 && angle == 0) {
      --paren;
    } else if (angle == 0 && paren == 0) {
      out.push_back(c);
    }
  }
  // What is left is "[return type ]qualified::name[ const]": keep the last word.
  while (!out.empty() && out.back() == ' ') out.pop_back();
  static constexpr std::string_view kConst = " const";
  if (out.size() > kConst.size() && out.ends_with(kConst)) out.resize(out.size() - kConst.size());
  const size_t space = out.rfind(' ');
  if (space != std::string::npos) out.erase(0, space + 1);
  return out.empty() ? std::string(demangled) : out;
}

}  // namespace gpuattr::collector
