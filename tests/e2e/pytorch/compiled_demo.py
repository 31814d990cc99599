"""The demo's GPT (examples/pytorch/train.py), torch.compile'd, then what dynamo counted.

    python compiled_demo.py EXAMPLE [--steps N] [--torch-profiler TRACE.json] [EXAMPLE'S FLAGS]

Runs the example unchanged with --compile, then prints one line of torch._dynamo's counters that
say whether anything broke or recompiled a graph: graph_break, recompiles and unimplemented. The
e2e test compares this script's whole stdout, losses included, under gpuattr run and bare. With
--torch-profiler the run is inside torch.profiler (with_modules, CUDA kernels on a GPU), whose
trace goes to TRACE.json: the GPU tier's view of the compiled kernels beside gpuattr's.
"""
import json
import runpy
import sys


def main():
    example = sys.argv[1]
    rest = sys.argv[2:]
    trace = None
    if "--torch-profiler" in rest:
        at = rest.index("--torch-profiler")
        trace = rest[at + 1]
        del rest[at:at + 2]
    sys.argv = [example, "--compile"] + rest
    if trace is None:
        runpy.run_path(example, run_name="__main__")
    else:
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities, with_modules=True) as profile:
            runpy.run_path(example, run_name="__main__")
        profile.export_chrome_trace(trace)
    from torch._dynamo.utils import counters

    print("dynamo " + json.dumps({name: dict(counters[name])
                                  for name in ("graph_break", "recompiles", "unimplemented")},
                                 sort_keys=True))


if __name__ == "__main__":
    main()
