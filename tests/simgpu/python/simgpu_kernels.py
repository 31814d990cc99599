"""What a GPU runs for one aten op: the simulated GPU's model of PyTorch's device work.

Test equipment (DESIGN §5), shared by simgpu_torch.py (the demo) and the PyTorch e2e scripts
(tests/e2e/pytorch/), which keep their own truth of where each launch lands but take from here
what is launched. It must be faithful where a GPU engineer looks first, so what is decided is
read from the op's schema, not from a list of op names:

  - an op whose every output aliases an input without writing it (a view: view, t, select,
    detach, expand, split, ...) launches nothing: it makes a new tensor header;
  - an op tagged `inplace_view` (resize_, as_strided_, transpose_) changes metadata only: nothing;
  - an op with no tensor output returns metadata (sizes, is_same_size): nothing; one that returns
    a number read from a tensor (`_local_scalar_dense`, what `.item()` runs, tagged
    `data_dependent_output`) is a device-to-host copy of one element, which the host waits for;
  - an op with no tensor output that writes lists of tensors in place (`_foreach_add_`,
    `_fused_adamw_`: `Tensor(a!)[]` in its schema) is one `multi_tensor_apply_kernel`, as
    PyTorch's CUDA foreach ops and fused optimizers launch for a list of a small model's size;
  - an allocation (`aten::empty*`, `aten::new_empty*`: memory from the caching allocator, its
    contents undefined) launches nothing;
  - a collective of `c10d` (all_reduce, all_gather_into_tensor, reduce_scatter_tensor, ...) is
    one NCCL kernel, named as NCCL 2.2x names its device kernels;
  - any other op is one kernel, named as PyTorch's CUDA kernels of its kind are named: cuBLAS
    GEMMs for matrix products, cuDNN implicit GEMMs for convolutions, `vectorized_elementwise_
    kernel<..., Functor>` for pointwise ops, `reduce_kernel<..., ReduceOp<...>>` for
    reductions, `at::native::<op>_kernel` otherwise; the op's own name is in every kernel's
    name, so its family (collector/data/family_rules.json) tells the op.

A kernel lasts 2 us plus 1 ns per 16 output elements, four times that for a matrix product or a
convolution; a copy 1 us plus 1 ns per byte. One kernel per op is the simulation's simplification
(a real op may launch several, or, fused by a compiler, share one).
"""

import torch

KERNEL = "kernel"
COPY_TO_HOST = "copy_to_host"

_MATRIX_PRODUCTS = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "dot")
_CONVOLUTIONS = ("convolution", "_convolution", "convolution_backward", "cudnn_convolution")
_ALLOCATIONS = ("empty", "new_empty")  # schema names that start so: aten::empty_strided, ...
_SCALAR_BYTES = 8  # what `.item()` copies back: one element, at most 8 bytes


class DeviceWork:
    """One launch: `kind` KERNEL (name, duration_ns) or COPY_TO_HOST (bytes, duration_ns)."""

    __slots__ = ("kind", "name", "duration_ns", "bytes")

    def __init__(self, kind, name, duration_ns, size_bytes=0):
        self.kind = kind
        self.name = name
        self.duration_ns = duration_ns
        self.bytes = size_bytes


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors(item)]
    return []


def _returns_tensors(schema):
    return any("Tensor" in str(returned.type) for returned in schema.returns)


def _is_view(schema):
    returns = schema.returns
    return bool(returns) and all(
        returned.alias_info is not None and not returned.alias_info.is_write
        for returned in returns)


def _written_lists(schema, args):
    """The tensor lists, not empty, an op's schema says it writes in place (`Tensor(a!)[]`)."""
    lists = [_tensors(value) for argument, value in zip(schema.arguments, args)
             if argument.alias_info is not None and argument.alias_info.is_write
             and str(argument.type) == "List[Tensor]"]
    return [tensors for tensors in lists if tensors]


def _multi_tensor_kernel_name(op_name, lists):
    functor = "at::native::(anonymous namespace)::%s_functor<%s>" % (op_name,
                                                                   _dtype_name(lists[0]))
    return ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
            "(anonymous namespace)::TensorListMetadata<%d>, %s>(%s)" % (len(lists), functor,
                                                                       functor))


def _tag_names(func):
    return {str(tag).rsplit(".", 1)[-1] for tag in getattr(func, "tags", ())}


def _dtype_name(tensors):
    dtype = tensors[0].dtype if tensors else torch.float32
    return {torch.float32: "float", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
            torch.float64: "double", torch.int64: "long", torch.bool: "bool"}.get(
                dtype, str(dtype).replace("torch.", ""))


def _collective_kernel(op_name):
    """The NCCL device kernel of collective `op_name` (c10d's `allreduce_`, `_allgather_base_`,
    `reduce_scatter_tensor_coalesced_`, ...)."""
    collective = op_name.lower()
    if "allgather" in collective or "all_gather" in collective:
        operation = "AllGather_RING_LL"
    elif "reduce_scatter" in collective:
        operation = "ReduceScatter_Sum_f32_RING_LL"
    elif "broadcast" in collective:
        operation = "Broadcast_RING_LL"
    elif "alltoall" in collective:
        operation = "SendRecv"
    else:
        operation = "AllReduce_Sum_f32_RING_LL"
    return "ncclDevKernel_%s(ncclDevKernelArgsStorage<4096ul>)" % operation


def _kernel_name(op, tags, tensors):
    dtype = _dtype_name(tensors)
    if op in _MATRIX_PRODUCTS:
        return ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas_%s" % op)
    if op in _CONVOLUTIONS:
        pass_name = "dgrad" if op.endswith("backward") else "fprop"
        return ("sm90_xmma_%s_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32_"
                "%s" % (pass_name, op))
    if "pointwise" in tags:
        functor = "at::native::%s_functor<%s>" % (op, dtype)
        return ("void at::native::vectorized_elementwise_kernel<4, %s, at::detail::Array<char*, "
                "2> >(int, %s, at::detail::Array<char*, 2>)" % (functor, functor))
    if "reduction" in tags:
        reduce_op = "at::native::ReduceOp<%s, at::native::%sOps<%s, %s>, unsigned int, %s, 4>" % (
            dtype, op, dtype, dtype, dtype)
        return "void at::native::reduce_kernel<512, 1, %s>(%s)" % (reduce_op, reduce_op)
    return "void at::native::(anonymous namespace)::%s_kernel<%s>(%s*, %s const*, long)" % (
        op, dtype, dtype, dtype)


def device_work(func, result, args=()):
    """What `func` (an OpOverload called with positional `args` that returned `result`) runs on
    a GPU: a DeviceWork, or None for an op that launches nothing (see the module's docstring)."""
    schema = func._schema
    namespace, _, op_name = schema.name.partition("::")
    tags = _tag_names(func)
    outputs = _tensors(result)
    kernel_ns = 2000 + sum(tensor.numel() for tensor in outputs) // 16
    if namespace == "c10d":
        return DeviceWork(KERNEL, _collective_kernel(op_name), kernel_ns)
    if not _returns_tensors(schema):
        if "data_dependent_output" in tags:
            return DeviceWork(COPY_TO_HOST, "DtoH", 1000 + _SCALAR_BYTES, _SCALAR_BYTES)
        lists = _written_lists(schema, args)
        if not lists:
            return None
        elements = sum(tensor.numel() for tensors in lists for tensor in tensors)
        return DeviceWork(KERNEL, _multi_tensor_kernel_name(op_name, lists),
                          2000 + elements // 16)
    if _is_view(schema) or "inplace_view" in tags or op_name.startswith(_ALLOCATIONS):
        return None
    op = func.overloadpacket.__name__
    if op in _MATRIX_PRODUCTS or op in _CONVOLUTIONS:
        kernel_ns *= 4
    return DeviceWork(KERNEL, _kernel_name(op, tags, outputs), kernel_ns)
