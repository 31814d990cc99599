"""The profiling-lesson block on a real GPU (docs/gpu-validation.md).

Linear 1024x1024 over a batch of 8192, then mul, add, gelu(tanh), add, clamp. The chain after the
Linear runs eager (five elementwise kernels: 2+2+2+3+2 = 11 tensor passes over memory) and fused
as one hand-written Triton kernel (reads h and the residual, writes the out: 3 passes), each in its
NVTX range (`linear`, `eager`, `fused`) inside a `step` range. gpuattr's eager/fused device-time
ratio is compared with the 11:3 byte ratio by scripts/gpu-check.sh.
Prints its truth (CUDA-event times per range, medians over the measured steps) as JSON.
"""
import torch_common as tc
from torch_common import torch

BATCH, FEATURES = 8192, 1024
SCALE, SHIFT, LO, HI = 0.5, 0.1, -3.0, 3.0


def eager_chain(h, residual):
    y = h * SCALE
    y = y + SHIFT
    y = torch.nn.functional.gelu(y, approximate="tanh")
    y = y + residual
    return torch.clamp(y, LO, HI)


def make_fused(device):
    if device == "cpu":  # the CPU check runs the same maths without Triton
        return eager_chain
    import triton
    import triton.language as tl

    @triton.jit
    def fused_chain_kernel(h_ptr, r_ptr, out_ptr, n, scale, shift, lo, hi, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        y = tl.load(h_ptr + offs, mask=mask) * scale + shift
        inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
        tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
        y = 0.5 * y * (1.0 + tanh) + tl.load(r_ptr + offs, mask=mask)
        y = tl.minimum(tl.maximum(y, lo), hi)
        tl.store(out_ptr + offs, y, mask=mask)

    def fused(h, residual):
        out = torch.empty_like(h)
        n = h.numel()
        fused_chain_kernel[(triton.cdiv(n, 1024),)](h, residual, out, n, SCALE, SHIFT, LO, HI,
                                                       BLOCK=1024)
        return out
    return fused


def main():
    args = tc.parse_args(__doc__.splitlines()[0])
    dev = args.device
    torch.manual_seed(0)
    linear = torch.nn.Linear(FEATURES, FEATURES, device=dev)
    x = torch.randn(BATCH, FEATURES, device=dev)
    residual = torch.randn(BATCH, FEATURES, device=dev)
    fused = make_fused(dev)
    ranges = {"linear": [], "eager": [], "fused": []}
    max_abs_diff = []

    def timed(name, fn, step):
        if dev == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
        with tc.nvtx(name, dev):
            out = fn()
        if dev == "cuda":
            stop.record()
            stop.synchronize()
            if step >= args.warmup:
                ranges[name].append(start.elapsed_time(stop))
        return out

    def step(i):
        with torch.no_grad(), tc.nvtx("step", dev):
            h = timed("linear", lambda: linear(x), i)
            a = timed("eager", lambda: eager_chain(h, residual), i)
            b = timed("fused", lambda: fused(h, residual), i)
            if i == args.warmup + args.steps - 1:
                max_abs_diff.append(float((a - b).abs().max()))

    with tc.profiler(args):
        step_ms = tc.time_steps(step, args)
    truth = {
        "program": "torch_lesson", "device": dev, "steps": args.steps, "warmup": args.warmup,
        "step_median_ms": tc.median_low(step_ms),
        "range_median_ms": {k: tc.median_low(v) for k, v in ranges.items()},
        "byte_ratio_eager_to_fused": 11 / 3,
        "eager_fused_max_abs_diff": max_abs_diff[0] if max_abs_diff else None,
        "torch_profiler_trace": args.torch_profiler,
    }
    tc.emit(truth)


if __name__ == "__main__":
    main()
