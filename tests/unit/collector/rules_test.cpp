// Rule tables as data: the built-in phase and family tables parse, phases follow
// docs/attribution.md §Phases (whole-name, case-insensitive, recompute inside backward), kernel
// names taken from real Kineto traces (/work/shared/traces) fold into the documented families,
// and malformed rule files are refused with a message naming the problem.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/kernel_family.h"
#include "analysis/phase.h"
#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

std::optional<std::string> PhaseOf(const std::vector<std::string>& path) {
  const std::optional<Phase> phase = PhaseRules::Default().PhaseOfPath(path);
  if (!phase) return std::nullopt;
  return PhaseName(*phase);
}

TEST_CASE("the built-in phase table assigns phases to paths", "[unit][rules]") {
  using Path = std::vector<std::string>;
  CHECK(PhaseOf(Path{"step", "forward"}) == "forward");
  CHECK(PhaseOf(Path{"step", "Forward"}) == "forward");  // case-insensitive
  CHECK(PhaseOf(Path{"step", "model.forward"}) == "forward");
  CHECK(PhaseOf(Path{"step", "fwd", "layer3"}) == "forward");  // innermost matching range
  CHECK(PhaseOf(Path{"step", "forwarding"}) == std::nullopt);  // the whole name must match
  CHECK(PhaseOf(Path{"step", "backward"}) == "backward");
  CHECK(PhaseOf(Path{"autograd::engine::evaluate_function: MmBackward0"}) == "backward");
  CHECK(PhaseOf(Path{"step", "backward", "checkpoint", "forward"}) == "recompute");
  CHECK(PhaseOf(Path{"step", "bwd", "layer", "fwd"}) == "recompute");
  CHECK(PhaseOf(Path{"step", "backward", "recompute"}) == "recompute");
  CHECK(PhaseOf(Path{"step", "optimizer"}) == "optimizer");
  CHECK(PhaseOf(Path{"Optimizer.step#SGD.step"}) == "optimizer");
  CHECK(PhaseOf(Path{"optimizer.step"}) == "optimizer");
  CHECK(PhaseOf(Path{"step", "compute_loss"}) == "loss");
  CHECK(PhaseOf(Path{"criterion"}) == "loss");
  CHECK(PhaseOf(Path{"step", "dataloader"}) == std::nullopt);
  CHECK(PhaseOf(Path{}) == std::nullopt);
  // A forward inside the loss is forward: only a backward above makes it recompute.
  CHECK(PhaseOf(Path{"loss", "forward"}) == "forward");
}

TEST_CASE("the built-in phase table knows the ranges PyTorch itself emits", "[unit][rules]") {
  using Path = std::vector<std::string>;
  // torchrec / DDP training loops and torch.profiler's own record_function names.
  CHECK(PhaseOf(Path{"ProfilerStep#3", "## forward ##"}) == "forward");
  CHECK(PhaseOf(Path{"## forward:split_sparse_features ##"}) == "forward");
  CHECK(PhaseOf(Path{"DistributedDataParallel.forward"}) == "forward");
  CHECK(PhaseOf(Path{"CompiledFunction"}) == "forward");
  CHECK(PhaseOf(Path{"ProfilerStep#3", "## backward ##"}) == "backward");
  CHECK(PhaseOf(Path{"CompiledFunctionBackward"}) == "backward");
  CHECK(PhaseOf(Path{"## optimizer ##", "Optimizer.step#FusedAdam.step"}) == "optimizer");
  CHECK(PhaseOf(Path{"## zero_grad ##"}) == "optimizer");
  CHECK(PhaseOf(Path{"Optimizer.zero_grad#Adagrad.zero_grad"}) == "optimizer");
  CHECK(PhaseOf(Path{"## loss ##"}) == "loss");
  // Other ## … ## annotations have no phase of their own.
  CHECK(PhaseOf(Path{"## load_batch ##"}) == std::nullopt);
  CHECK(PhaseOf(Path{"## all2all_data:lengths ##"}) == std::nullopt);
  CHECK(PhaseOf(Path{"## metrics:publish ##"}) == std::nullopt);
  // A forward annotation under a backward one is recompute, as for any forward range.
  CHECK(PhaseOf(Path{"## backward ##", "## forward ##"}) == "recompute");
  // Collective ranges: torch.profiler's nccl:* and record_param_comms, c10d ops.
  CHECK(PhaseOf(Path{"nccl:all_reduce"}) == "communication");
  CHECK(PhaseOf(Path{"## backward ##", "record_param_comms"}) == "communication");
  CHECK(PhaseOf(Path{"c10d::allreduce_"}) == "communication");
}

TEST_CASE("a replacement phase table applies its own patterns", "[unit][rules]") {
  StatusOr<PhaseRules> rules =
      PhaseRules::Parse(R"({"phases": {"forward": ["fp_.*"], "backward": ["bp_.*"]}})", "test");
  REQUIRE(rules.ok());
  CHECK(rules->PhaseOfPath({"fp_block"}) == Phase::kForward);
  CHECK(rules->PhaseOfPath({"bp_block", "fp_block"}) == Phase::kRecompute);
  CHECK_FALSE(rules->PhaseOfPath({"forward"}).has_value());  // built-ins are replaced
  CHECK_FALSE(rules->PhaseOfPath({"optimizer"}).has_value());
}

void CheckPhaseError(const std::string& text, const std::string& expected) {
  const StatusOr<PhaseRules> rules = PhaseRules::Parse(text, "p.json");
  INFO(text);
  REQUIRE_FALSE(rules.ok());
  CHECK(rules.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(rules.status().message(), Catch::Contains(expected));
  CHECK_THAT(rules.status().message(), Catch::StartsWith("p.json"));
}

void CheckFamilyError(const std::string& text, const std::string& expected) {
  const StatusOr<FamilyRules> rules = FamilyRules::Parse(text, "f.json");
  INFO(text);
  REQUIRE_FALSE(rules.ok());
  CHECK(rules.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(rules.status().message(), Catch::Contains(expected));
}

TEST_CASE("malformed rule files are refused with the problem named", "[unit][rules]") {
  CheckPhaseError("{", "not valid JSON");
  CheckPhaseError("[]", "not an object");
  CheckPhaseError(R"({"rules": []})", "\"phases\" is missing");
  CheckPhaseError(R"({"phases": {}, "extra": 1})", "unknown key \"extra\"");
  CheckPhaseError(R"({"phases": {"warmup": ["w"]}})", "unknown phase \"warmup\"");
  CheckPhaseError(R"({"phases": {"forward": "fwd"}})", "not an array");
  CheckPhaseError(R"({"phases": {"forward": [3]}})", "pattern 0 is not a string");
  CheckPhaseError(R"({"phases": {"loss": ["ok", "(unclosed"]}})",
                  "phase \"loss\" pattern 1: invalid regular expression '(unclosed'");
  CheckFamilyError("nope", "not valid JSON");
  CheckFamilyError(R"({"phases": {}})", "\"rules\" is missing");
  CheckFamilyError(R"({"rules": [1]})", "rule 0 is not an object");
  CheckFamilyError(R"({"rules": [{"match": "a"}]})", "rule 0 needs \"match\" and \"family\"");
  CheckFamilyError(R"({"rules": [{"match": "a", "family": ""}]})", "\"family\" is empty");
  CheckFamilyError(R"({"rules": [{"match": "a", "family": "b", "fam": "c"}]})",
                   "unknown key \"fam\"");
  CheckFamilyError(R"({"rules": [{"match": "a", "family": 2}]})", "\"family\" is not a string");
  CheckFamilyError(R"({"rules": [{"match": "a", "family": "b", "category": "comms"}]})",
                   "\"category\" must be compute or communication, not \"comms\"");
  CheckFamilyError(R"({"rules": [{"match": "a", "family": "b"}, {"match": "[", "family": "c"}]})",
                   "rule 1: invalid regular expression '['");

  test_support::TempDir dir;
  const StatusOr<FamilyRules> missing = FamilyRules::Load(dir.File("absent.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("cannot open"));
  std::ofstream(dir.File("rules.json"))
      << R"json({"rules": [{"match": "^my_(\\w+)", "family": "mine:$1"}]})json";
  const StatusOr<FamilyRules> loaded = FamilyRules::Load(dir.File("rules.json"));
  REQUIRE(loaded.ok());
  CHECK(loaded->FamilyOf("my_kernel_v2") == "mine:kernel_v2");
  CHECK(loaded->FamilyOf("void other<int>(int)") == "other");  // no rule: default normalisation
}

// Demangled names as Kineto recorded them on A100 runs (hta traces in /work/shared/traces).
TEST_CASE("family rules say which kernels are collectives", "[unit][rules]") {
  const FamilyRules& rules = FamilyRules::Default();
  const FamilyRules::KernelClass nccl = rules.ClassOf("ncclKernel_AllReduce_RING_LL_Sum_float");
  CHECK(nccl.family == "nccl_AllReduce");
  CHECK(nccl.communication);
  CHECK(rules.ClassOf("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)").communication);
  CHECK_FALSE(rules.ClassOf("ampere_sgemm_128x64_nn").communication);
  CHECK_FALSE(rules.ClassOf("void my_kernel<float>(float*)").communication);  // no rule: compute
  StatusOr<FamilyRules> own = FamilyRules::Parse(
      R"({"rules": [{"match": "^allgather_", "family": "ag", "category": "communication"},
                    {"match": "^gemm", "family": "gemm", "category": "compute"}]})",
      "test");
  REQUIRE(own.ok());
  CHECK(own->ClassOf("allgather_ring").communication);
  CHECK_FALSE(own->ClassOf("gemm_128").communication);
}

TEST_CASE("the built-in family table folds real kernel names", "[unit][rules]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
       "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}"
       "::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::"
       "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
       "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::"
       "Array<char*, 2>)",
       "vectorized_elementwise_kernel<GeluCUDAKernelImpl>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::"
       "Array<char*, 3>)",
       "vectorized_elementwise_kernel<CUDAFunctor_add>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
       "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >"
       "(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::"
       "MulFunctor<float> >, at::detail::Array<char*, 3>)",
       "vectorized_elementwise_kernel<MulFunctor>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
       "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >"
       "(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::"
       "MulFunctor<float> >, at::detail::Array<char*, 2>)",
       "vectorized_elementwise_kernel<MulFunctor>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
       "float, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::"
       "TensorIteratorBase&, float, float)::{lambda(float, float)#1}>, at::detail::Array<char*, 3>"
       " >(int, at::native::BinaryFunctor<float, float, float, at::native::(anonymous namespace)::"
       "threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)"
       "#1}>, at::detail::Array<char*, 3>)",
       "vectorized_elementwise_kernel<threshold_kernel_impl>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::"
       "detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, "
       "1>)",
       "vectorized_elementwise_kernel<FillFunctor>"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
       "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail"
       "::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
       "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::"
       "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail"
       "::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
       "{lambda(float)#1}, at::detail::Array<char*, 2>)",
       "vectorized_elementwise_kernel<launch_clamp_scalar>"},
      {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::"
       "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
       "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<"
       "float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::"
       "{lambda(int)#1})",
       "elementwise_kernel<CUDAFunctor_add>"},
      {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::"
       "BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> > >(at::"
       "TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::"
       "binary_internal::DivFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::"
       "gpu_kernel_impl<at::native::BinaryFunctor<float, float, float, at::native::"
       "binary_internal::DivFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor"
       "<float, float, float, at::native::binary_internal::DivFunctor<float> > const&)::"
       "{lambda(int)#1})",
       "elementwise_kernel<DivFunctor>"},
      {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
       "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::"
       "{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, "
       "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native"
       "::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::"
       "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::"
       "{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, "
       "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native"
       "::memory::StoreWithCast<1>)",
       "unrolled_elementwise_kernel<direct_copy_kernel_cuda>"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
       "float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::"
       "native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
       "reduce_kernel<MeanOps>"},
      {"ampere_sgemm_128x64_nn", "cublas_gemm"},
      {"ampere_sgemm_32x32_sliced1x4_tn", "cublas_gemm"},
      {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       "cublas_gemm"},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x5_tn_align4>("
       "cutlass_80_tensorop_s1688gemm_128x128_32x5_tn_align4::Params)",
       "cutlass_gemm"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>"
       "(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)",
       "cutlass_gemm"},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
       "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
       "float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
       "float>, float, float)",
       "cublas_gemv"},
      {"std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, "
       "float, float, false, true, true, false, 7, cublasGemvParams<cublasGemvTensorStridedBatched"
       "<float const>, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<"
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float>, float>)",
       "cublas_gemv"},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, true, "
       "false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float "
       "const*, float const*, float const*, float const*, float*, void*, long, float*, int*)",
       "cublas_gemm"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"
       "_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
       "implicit_gemm_conv_fprop"},
      {"void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_128x128_16x4_"
       "nhwc_unity_stride_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_128x128_16x4_nhwc_"
       "unity_stride_align4::Params)",
       "implicit_gemm_conv_dgrad"},
      {"cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "implicit_gemm_conv"},
      {"void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::Rmsnorm2dFwdPipelineOnePass<"
       "std::bfloat16_t, float> > >(ck_tile::Rmsnorm2dFwdHostArgs)",
       "ck_tile::Rmsnorm2dFwd"},
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
       "nccl_AllReduce"},
      // No rule: the default normalisation.
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 32, true, 1, true>("
       "cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, "
       "float, float, float*, float*, float*, float*, float, float)",
       "cudnn::bn_fw_tr_1C11_kernel_NCHW"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
       "float, float const*, float const*, float const*, float*, float*, float*)",
       "at::native::vectorized_layer_norm_kernel"},
  };
  for (const auto& [name, family] : cases) {
    INFO(name);
    CHECK(FamilyRules::Default().FamilyOf(name) == family);
  }
  CHECK(FamilyRules::Default().size() > 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
