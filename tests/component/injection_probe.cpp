// libinjection_probe.so: the library injection_test.cpp loads into injection_target. Its
// constructor and entry clobber errno and allocate, as a real library's would; the entry keeps
// its argument where the target can find it and returns a known value.
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern "C" {

__attribute__((visibility("default"))) char probe_argument[256];

__attribute__((constructor)) void ProbeLoaded() { errno = 99; }

__attribute__((visibility("default"))) int probe_entry(const char* argument) {
  std::strncpy(probe_argument, argument, sizeof(probe_argument) - 1);
  void* scratch = std::malloc(4096);
  std::memset(scratch, 1, 4096);
  std::free(scratch);
  errno = 77;
  return 41;
}
}
