// An injection library that subscribes nothing: what the simulated driver's cuInit meets when
// CUDA_INJECTION64_PATH names the shim in armed mode (docs/attach.md), without the shim. Test
// equipment for tests/simgpu/tests.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() { return 1; }
