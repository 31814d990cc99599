// gpuattr: thin entry point. All logic is in collector/cli (GpuattrMain), so tests can link it.
#include "cli/cli.h"

int main(int argc, char** argv) { return gpuattr::collector::GpuattrMain(argc, argv); }
