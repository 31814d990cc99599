"""Shared by the PyTorch scripts of the real-GPU tier (docs/gpu-validation.md).

Each script imports this first: it refuses with exit status 3 when torch is missing (or when
--device cuda is asked on a machine without CUDA), and gives the NVTX helper, the step timer
(CUDA events; median of the measured steps) and the torch.profiler wrapper that exports a chrome
trace for `gpuattr import`. Single-threaded: everything runs on the script's main thread.
"""
import argparse
import contextlib
import json
import statistics
import sys
import time

EXIT_NO_TORCH = 3

try:
    import torch
except ImportError as exc:  # the GPU machine has torch; a bare CI machine does not
    sys.stderr.write(f"{sys.argv[0]}: PyTorch is not importable ({exc}); "
                     "this script needs torch (and a GPU unless --device cpu)\n")
    sys.exit(EXIT_NO_TORCH)


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu runs the same model code on CPU tensors, without NVTX or CUDA")
    p.add_argument("--steps", type=int, default=50, help="measured steps (after warm-up)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up steps, not measured")
    p.add_argument("--torch-profiler", metavar="OUT.json",
                   help="run under torch.profiler in this process and export a chrome trace")
    if extra:
        extra(p)
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.stderr.write(f"{sys.argv[0]}: no CUDA device visible to torch; "
                         "use --device cpu for the CPU check\n")
        sys.exit(EXIT_NO_TORCH)
    return args


def nvtx(name, device):
    """An NVTX range on CUDA; nothing on CPU (the CPU check runs without NVTX)."""
    if device == "cuda":
        return torch.cuda.nvtx.range(name)
    return contextlib.nullcontext()


def profiler(args):
    """torch.profiler over the whole run when --torch-profiler is given, else nothing."""
    if not args.torch_profiler:
        return contextlib.nullcontext()
    acts = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    # with_flops: torch's own FLOP figures, beside gpuattr's (scripts/gpu-check.sh, issue 22).
    prof = torch.profiler.profile(activities=acts, with_flops=True)

    @contextlib.contextmanager
    def run():
        with prof:
            yield
        prof.export_chrome_trace(args.torch_profiler)
    return run()


def time_steps(step_fn, args):
    """Runs warm-up then measured steps; returns per-step milliseconds of the measured ones.

    On CUDA each step is bracketed by CUDA events on the current stream (device time of the step,
    which is what gpuattr's overhead would stretch); on CPU by perf_counter.
    """
    times = []
    for i in range(args.warmup + args.steps):
        if args.device == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            step_fn(i)
            stop.record()
            stop.synchronize()
            ms = start.elapsed_time(stop)
        else:
            t0 = time.perf_counter()
            step_fn(i)
            ms = (time.perf_counter() - t0) * 1e3
        if i >= args.warmup:
            times.append(ms)
    return times


def emit(truth):
    """Prints the script's truth as one JSON object on stdout."""
    print(json.dumps(truth, sort_keys=True))


def median_low(values):
    return statistics.median_low(values) if values else None
