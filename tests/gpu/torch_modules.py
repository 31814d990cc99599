"""Unannotated PyTorch on a real GPU, for the Python annotator (docs/gpu-validation.md, issue 19).

No NVTX and no record_function of its own: under `gpuattr run` the annotator alone gives the
ranges. Two models (--model):
  lesson        the profiling lesson's block as modules: `linear` (Linear 1024x1024 over a
                batch of 8192), then mul, add, gelu(tanh), add, clamp in the block's own forward;
                an MSELoss module, SGD;
  checkpointed  four residual MLP blocks (`blocks.0` ... `blocks.3`, Linear 1024 -> 4096 -> 1024
                with GELU), `blocks.2` under activation checkpointing (reentrant), Adam.
With --torch-profiler OUT.json the same program runs under torch.profiler (with_modules=True,
for `gpuattr import`), and the script prints its reference per module from the profiler's own
key_averages(): forward = the device time of a `ref: <module>` record_function the script puts
around each module call in that run only (its children's subtracted: self time, as gpuattr's
modules rows are; a recomputed module's includes its recompute, gpuattr's forward + recompute),
backward = the device time of the `autograd::engine::evaluate_function: <Node>` rows of the node
types that module's forward makes, where they are its alone (NODES_BY_MODULE).
scripts/gpu-check.sh compares gpuattr's `modules` rows with that reference (tests/gpu/compare.py).
"""
import torch_common as tc
from torch_common import torch
from torch.utils.checkpoint import checkpoint

BATCH, FEATURES = 8192, 1024
SCALE, SHIFT, LO, HI = 0.5, 0.1, -3.0, 3.0

# The autograd node types each module's own ops make (the reference's backward by module).
NODES_BY_MODULE = {
    "lesson": {
        "Lesson_0/linear": ["AddmmBackward0", "TBackward0"],
        "Lesson_0": ["MulBackward0", "AddBackward0", "GeluBackward0", "ClampBackward1"],
    },
    # The checkpointed block's whole backward runs inside its checkpoint's node, which Blocks'
    # own forward makes (the other blocks' Linear nodes share their types: not separable).
    "checkpointed": {
        "Blocks_0": ["CheckpointFunctionBackward"],
    },
}


class Lesson(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(FEATURES, FEATURES)

    def forward(self, x, residual):
        y = self.linear(x) * SCALE
        y = y + SHIFT
        y = torch.nn.functional.gelu(y, approximate="tanh")
        y = y + residual
        return torch.clamp(y, LO, HI)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(FEATURES, 4 * FEATURES)
        self.act = torch.nn.GELU()
        self.down = torch.nn.Linear(4 * FEATURES, FEATURES)

    def forward(self, x):
        return x + self.down(self.act(self.up(x)))


class Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=True) if i == 2 else block(x)
        return x


def add_args(p):
    p.add_argument("--model", choices=["lesson", "checkpointed"], default="lesson")


def reference_ranges(model, root_name):
    """A `ref: <path>` record_function around each module call (the profiled run only). The path
    is the calls' nesting, as gpuattr's modules rows spell it (Root/child/child.grandchild); a
    call with no module open (a checkpoint's recompute) takes the path its module last had."""
    names = {module: name or root_name for name, module in model.named_modules()}
    last_path = {}
    stack = []  # (path, record_function) of the open calls
    paths = set()

    def pre(module, inputs):
        path = stack[-1][0] + "/" + names[module] if stack else last_path.get(module, root_name)
        last_path[module] = path
        paths.add(path)
        record = torch.autograd.profiler.record_function("ref: " + path)
        record.__enter__()
        stack.append((path, record))

    def post(module, inputs, outputs):
        stack.pop()[1].__exit__(None, None, None)

    for module in names:
        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
    return paths


def reference(prof, module_paths, model_name):
    """Per module path: forward (self) and backward device ns from key_averages()."""
    rows = {row.key: row for row in prof.key_averages()}

    def device_ns(row):
        total = getattr(row, "device_time_total", None)
        if total is None:
            total = row.cuda_time_total
        return int(total * 1000)  # key_averages reports microseconds

    forward_total = {path: device_ns(rows["ref: " + path]) for path in module_paths
                     if "ref: " + path in rows}
    out = {}
    for path, total in forward_total.items():
        children = sum(t for p, t in forward_total.items()
                       if p.startswith(path + "/") and p.count("/") == path.count("/") + 1)
        out[path] = {"forward_ns": total - children, "backward_ns": None}
    for path, nodes in NODES_BY_MODULE[model_name].items():
        keys = ["autograd::engine::evaluate_function: " + node for node in nodes]
        if path in out and all(key in rows for key in keys):
            out[path]["backward_ns"] = sum(device_ns(rows[key]) for key in keys)
    return out


def main():
    args = tc.parse_args(__doc__.splitlines()[0], add_args)
    dev = args.device
    torch.manual_seed(0)
    if args.model == "lesson":
        model, root = Lesson().to(dev), "Lesson_0"
        inputs = (torch.randn(BATCH, FEATURES, device=dev),
                  torch.randn(BATCH, FEATURES, device=dev))
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    else:
        model, root = Blocks().to(dev), "Blocks_0"
        inputs = (torch.randn(BATCH // 4, FEATURES, device=dev, requires_grad=True),)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    criterion = torch.nn.MSELoss()
    target = torch.zeros(inputs[0].shape, device=dev)
    module_paths = reference_ranges(model, root) if args.torch_profiler else set()

    def step_fn(i):
        optimizer.zero_grad()
        criterion(model(*inputs), target).backward()
        optimizer.step()

    prof = None
    if args.torch_profiler:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if dev == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=activities, with_modules=True)
        with prof:
            step_ms = tc.time_steps(step_fn, args)
        prof.export_chrome_trace(args.torch_profiler)
    else:
        step_ms = tc.time_steps(step_fn, args)
    tc.emit({
        "program": "torch_modules", "model": args.model, "device": dev, "steps": args.steps,
        "warmup": args.warmup, "step_median_ms": tc.median_low(step_ms),
        "reference": reference(prof, module_paths, args.model) if prof else None,
    })


if __name__ == "__main__":
    main()
