// Kernel names: demangling and the normalisation of a demangled name into a family (DESIGN §2).
//
// A family is the kernel's qualified name with template arguments, parameter lists, anonymous
// namespaces and the return type stripped: `void at::native::(anonymous namespace)::k<float, 4>
// (float*, int)` is `at::native::k`. Family rules as data (gemm folding, functor keeping,
// --family-rules) are a later issue; this is the default normalisation they start from.
// Pure functions; any thread.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_
#define GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_

#include <string>
#include <string_view>

namespace gpuattr::collector {

// abi::__cxa_demangle of an Itanium-mangled name; any other name is returned as is.
std::string DemangleKernelName(std::string_view name);

// The family of a demangled (or never mangled) kernel name.
std::string KernelFamily(std::string_view demangled);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_KERNEL_FAMILY_H_
