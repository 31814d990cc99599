// The smallest real CUDA program: it asks the runtime how many devices there are and prints the
// answer. Built with the toolkit's nvcc twice (the runtime linked statically, nvcc's default, and
// as libcudart.so) for refusal_e2e_test: on a machine without a driver it must get
// driver_missing.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  int devices = -1;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  std::printf("cudaGetDeviceCount: %s, %d device(s)\n", cudaGetErrorName(error), devices);
  return 0;
}
