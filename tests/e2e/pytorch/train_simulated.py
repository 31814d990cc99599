"""A real torch training loop whose every aten op launches one kernel on the simulated GPU.

The device side of the Python annotator's test (pytorch_annotator_e2e_test.cpp): a dispatch mode
launches one simulated kernel per aten op, from the thread that runs the op, through
libsimgpu_pywork (simgpu_torch.SimulatedGpu, SIMGPU_PYWORK_LIBRARY), and this script writes the
truth of each kernel (--truth, the simulator's truth format, DESIGN §5) from its own
bookkeeping, which shares nothing with the annotator:
  - the loop says where it is (the batch fetch, zero_grad, the step, optimizer.step);
  - modules: per-module hooks of its own keep a stack of module names (the documented naming:
    `nn.Module: Net_0` for a root, qualified names below it);
  - backward: a torch-function mode tags every autograd node with the module stack open when the
    torch function that made it ran (the nodes between its outputs and its inputs), and the
    checkpoint's own node with the stack open at the checkpoint call; each tagged node gets hooks
    of this script's that say which node this thread runs. A kernel launched while a node runs
    belongs to [step, <that node's modules>, backward] (`backward_unlinked` for AccumulateGrad,
    which no torch function made), then the modules recomputed inside it; a node that runs
    within another one (a reentrant checkpoint's inner backward) adds its own modules and leaf
    to the outer one's path; the nodes a recompute makes inside a node are tagged by a mode
    entered for the node's run (on torch 1.13, whose modes share one stack, what the modes
    missed is tagged by the module hooks of the calls that made the nodes).
That is the model docs/attribution.md §PyTorch defines (a leaf per top-level backward op, under
the module path of the op that made it), computed op by op.

With --kineto FILE it also writes the same run as torch.profiler would have recorded it with
with_modules=True, in the Kineto trace format torch writes (Debian's torch has no Kineto): the
steps, optimizer and batch-fetch annotations, a python_function `nn.Module: <Class>_<k>` event
per module call (torch's names: k numbers the instances of a class in the order they first ran),
a cpu_op with a `Sequence number` per autograd node at the torch function that made it, an
`autograd::engine::evaluate_function: <Node>` op per node run, and every launch and kernel with
its correlation id. --module-names FILE maps torch's names to the annotator's qualified ones.
"""
import argparse
import contextlib
import json
import os
import threading
import time

import torch
import torch.nn as nn
import torch.utils.checkpoint
import torch.utils.data
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import simgpu_kernels  # tests/simgpu/python, on PYTHONPATH
import simgpu_torch
import simulated_models

# torch >= 2 keeps torch-function modes and dispatch modes on stacks of their own; torch 1.13 has
# one stack of Python modes, on which a function mode entered above a dispatch mode sees aten ops.
SEPARATE_MODE_STACKS = int(torch.__version__.split(".")[0]) >= 2
STEP = "ProfilerStep#*"
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
ZERO_GRAD = "Optimizer.zero_grad#SGD.zero_grad"
OPTIMIZER_STEP = "Optimizer.step#SGD.step"


class Truth:
    """Where each kernel belongs, from this script's own bookkeeping (see the docstring)."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.activities = []
        self.loop_context = []
        self.local = threading.local()
        self.trace = KinetoTrace()

    def thread(self):
        local = self.local
        if not hasattr(local, "modules"):
            local.modules = []
            local.module_starts = []
            # The nodes this thread runs: (the path below them, modules open then, their mode).
            local.nodes = []
            local.node_starts = []
            local.ran_a_node = False
        return local

    def path(self):
        local = self.thread()
        if local.nodes:
            node_path, modules_open, _ = local.nodes[-1]
            return node_path + local.modules[modules_open:]
        return self.loop_context + local.modules

    def launch(self, work):
        """Runs one simgpu_kernels.DeviceWork and records where it belongs."""
        path = self.path()
        local = self.thread()
        # A thread of its own (--backward-thread) has ranges only inside a node or a module;
        # elsewhere its kernels take the main thread's (DESIGN §2: inherited).
        own_ranges = (threading.current_thread() is threading.main_thread() or
                      local.nodes or local.modules)
        attribution = ("direct" if own_ranges else "inherited") if path else "none"
        launched = self.gpu.run(work)
        returned_ns = time.monotonic_ns()
        if launched is None:
            raise RuntimeError("the simulated GPU did not run " + work.name)
        launch_ns, start_ns, end_ns, correlation = launched
        copy = work.kind == simgpu_kernels.COPY_TO_HOST
        name = "memcpy_DtoH" if copy else work.name
        self.trace.launch(work, correlation, launch_ns, returned_ns, start_ns, end_ns)
        self.activities.append({
            "kind": "memcpy" if copy else "kernel", "name": name,
            "correlation_id": correlation, "device": 0,
            "stream": 0, "launch_ns": launch_ns, "start_ns": start_ns, "end_ns": end_ns,
            "thread": threading.current_thread().name, "range_path": path,
            "attribution": attribution,
            # Off the main thread with no range of its own, after a node ran there: backward by
            # docs/attribution.md §Phases (the gradient callback's work, not the gradient seed's).
            "after_own_node": local.ran_a_node,
            "graph_node": None})

    # modules

    def watch_modules(self, root, root_name):
        for name, module in root.named_modules():
            range_name = "nn.Module: " + (name if name else root_name)
            module.register_forward_pre_hook(
                lambda module, inputs, range_name=range_name: self.enter_module(range_name))
            leave = lambda module, inputs, outputs: self.leave_module(  # noqa: E731
                module, inputs, outputs)
            try:  # torch >= 2.1: a call that raised (a recompute stopped early) ends too
                module.register_forward_hook(leave, always_call=True)
            except TypeError:
                module.register_forward_hook(leave)

    def enter_module(self, range_name):
        local = self.thread()
        local.modules.append(range_name)
        local.module_starts.append(time.monotonic_ns())

    def leave_module(self, module, inputs, outputs):
        local = self.thread()
        end_ns = time.monotonic_ns()
        if not SEPARATE_MODE_STACKS:
            # torch 1.13's one stack of Python modes hides torch functions from TagNodes inside
            # a node (a mode entered there sees aten ops) and inside a non-reentrant checkpoint's
            # forward: what it did not tag, the call's nodes, is tagged here, the innermost
            # call's first, as it returns first, with the modules open at the call.
            self.tag(outputs, inputs, list(local.modules), local.module_starts[-1], end_ns)
        self.trace.module_call(module, local.modules.pop(), local.module_starts.pop(), end_ns)

    # autograd nodes

    def tag(self, outputs, inputs, modules, start_ns, end_ns):
        """Tags the untagged nodes between `outputs` and `inputs` with `modules`: the torch
        function that made them ran from start_ns to end_ns."""
        boundary = {id(tensor.grad_fn) for tensor in tensors_of(inputs)}
        pending = [tensor.grad_fn for tensor in tensors_of(outputs) if tensor.grad_fn is not None]
        while pending:
            node = pending.pop()
            if id(node) in boundary or "truth" in node.metadata:
                continue
            node_name = type(node).__name__
            if node_name == "AccumulateGrad":
                node_path = ["backward_unlinked"]
                sequence = None
            else:
                node_path = modules + ["backward"]
                sequence = self.trace.forward_op(start_ns, end_ns)
                pending.extend(next_node for next_node, _ in node.next_functions
                               if next_node is not None)
            node.metadata["truth"] = node_path
            node.register_prehook(lambda grads, node_path=node_path: self.enter_node(node_path))
            node.register_hook(lambda grad_inputs, grad_outputs, node_name=node_name,
                               sequence=sequence: self.leave_node(node_name, sequence))

    def enter_node(self, node_path):
        local = self.thread()
        below = self.path() if local.nodes else [STEP]
        # Torch-function modes are off while autograd runs a node: the nodes a recompute makes
        # inside it are tagged by a mode entered for the node's run (torch >= 2; on 1.13 by the
        # module hooks, leave_module).
        tagging = TagNodes(self) if SEPARATE_MODE_STACKS else contextlib.nullcontext()
        tagging.__enter__()
        local.nodes.append((below + node_path, len(local.modules), tagging))
        local.node_starts.append(time.monotonic_ns())
        local.ran_a_node = True

    def leave_node(self, node_name, sequence):
        local = self.thread()
        _, modules_open, tagging = local.nodes.pop()
        tagging.__exit__(None, None, None)
        # Module calls a recompute left open (one that stopped early) end with the node.
        del local.modules[modules_open:]
        self.trace.backward_op(node_name, sequence, local.node_starts.pop(), time.monotonic_ns())

    def write(self, path):
        with open(path, "w") as out:
            json.dump({"processes": [{"pid": os.getpid(), "rank": None, "name": "train",
                                      "activities": self.activities, "ranges": [],
                                      "marks": []}]}, out)


class KinetoTrace:
    """The run as torch.profiler's Kineto trace of it (see the docstring): host events on the
    threads that made them, kernels on device 0's stream 7, times in microseconds with the
    nanoseconds exact."""

    def __init__(self):
        self.events = []
        self.pid = os.getpid()
        self.next_sequence = 0
        self.names_by_module = {}  # id(module) -> torch's `nn.Module: Class_k`
        self.calls_by_class = {}
        self.module_names = {}  # torch's name -> the annotator's

    def host(self, category, name, start_ns, end_ns, args=None):
        """An event of the calling thread."""
        self.events.append((category, name, self.pid, threading.get_native_id(), start_ns,
                            end_ns, args))

    def annotation(self, name, start_ns, end_ns):
        self.host("user_annotation", name, start_ns, end_ns)

    def module_call(self, module, qualified_name, start_ns, end_ns):
        name = self.names_by_module.get(id(module))
        if name is None:
            class_name = type(module).__name__
            index = self.calls_by_class.get(class_name, 0)
            self.calls_by_class[class_name] = index + 1
            name = self.names_by_module[id(module)] = "nn.Module: %s_%d" % (class_name, index)
            self.module_names[name] = qualified_name
        self.host("python_function", name, start_ns, end_ns)

    def forward_op(self, start_ns, end_ns):
        """A forward op that made one autograd node; returns its sequence number."""
        sequence = self.next_sequence
        self.next_sequence += 1
        self.host("cpu_op", "aten::forward_op", start_ns, end_ns, {"Sequence number": sequence})
        return sequence

    def backward_op(self, node_name, sequence, start_ns, end_ns):
        if node_name == "AccumulateGrad":
            node_name = "torch::autograd::AccumulateGrad"
        args = {"Sequence number": sequence} if sequence is not None else None
        self.host("cpu_op", "autograd::engine::evaluate_function: " + node_name, start_ns, end_ns,
                  args)

    def launch(self, work, correlation, launch_ns, returned_ns, start_ns, end_ns):
        """One simgpu_kernels.DeviceWork, a kernel or a device-to-host copy, and the runtime
        call that launched it."""
        copy = work.kind == simgpu_kernels.COPY_TO_HOST
        self.host("cuda_runtime", "cudaMemcpyAsync" if copy else "cudaLaunchKernel", launch_ns,
                  returned_ns, {"correlation": correlation})
        if copy:
            self.events.append(("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, start_ns,
                                end_ns, {"device": 0, "stream": 7, "correlation": correlation,
                                         "bytes": work.bytes}))
        else:
            self.events.append(("kernel", work.name, 0, 7, start_ns, end_ns,
                                {"device": 0, "stream": 7, "correlation": correlation}))

    def write(self, path):
        def microseconds(ns):
            return "%d.%03d" % divmod(ns, 1000)

        lines = []
        for category, name, pid, tid, start_ns, end_ns, args in self.events:
            lines.append('{"ph": "X", "cat": %s, "name": %s, "pid": %d, "tid": %d, "ts": %s, '
                         '"dur": %s%s}' % (json.dumps(category), json.dumps(name), pid, tid,
                                           microseconds(start_ns),
                                           microseconds(end_ns - start_ns),
                                           ', "args": ' + json.dumps(args) if args else ""))
        with open(path, "w") as out:
            out.write('{"traceEvents": [\n' + ",\n".join(lines) + "\n]}\n")


def tensors_of(value):
    if isinstance(value, torch.Tensor):
        return [value] if value.requires_grad else []
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in tensors_of(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in tensors_of(item)]
    return []


class KernelPerOp(TorchDispatchMode):
    """Launches what a GPU runs for each op (simgpu_kernels: nothing for a view), after it ran."""

    def __init__(self, truth):
        super().__init__()
        self.truth = truth

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        work = simgpu_kernels.device_work(func, result)
        if work is not None:
            self.truth.launch(work)
        return result


class TagNodes(TorchFunctionMode):
    def __init__(self, truth):
        super().__init__()
        self.truth = truth

    def __torch_function__(self, func, types, args=(), kwargs=None):
        start_ns = time.monotonic_ns()
        result = func(*args, **(kwargs or {}))
        end_ns = time.monotonic_ns()
        with torch._C.DisableTorchFunction():
            self.truth.tag(result, (args, kwargs), list(self.truth.thread().modules), start_ns,
                           end_ns)
        return result


def tag_checkpoints(truth):
    """CheckpointFunction.apply is no torch function: its node is tagged where it is called."""
    checkpoint_function = torch.utils.checkpoint.CheckpointFunction
    apply = checkpoint_function.apply

    def apply_and_tag(*args):
        start_ns = time.monotonic_ns()
        result = apply(*args)
        truth.tag(result, args, list(truth.thread().modules), start_ns, time.monotonic_ns())
        return result

    checkpoint_function.apply = apply_and_tag


def backward_on_this_thread(truth, loss, model):
    """loss.backward() on the calling thread, which launches its own kernels (the modes are per
    thread). As DDP's reducer does when backward ends, a callback queued from a hook then scales
    the gradients there, outside any autograd node: backward work with no range of its own
    (docs/attribution.md §Phases, backward on autograd's threads)."""
    def finish_gradients():
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.grad is not None:
                    parameter.grad.mul_(1.0)

    engine = torch.autograd.Variable._execution_engine
    loss.grad_fn.register_hook(lambda *_: engine.queue_callback(finish_gradients))
    with KernelPerOp(truth), TagNodes(truth):
        loss.backward()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--truth", required=True)
    parser.add_argument("--kineto")
    parser.add_argument("--module-names")
    parser.add_argument("--model", choices=sorted(simulated_models.MODELS), default="net")
    parser.add_argument("--checkpoint", choices=simulated_models.CHECKPOINTS,
                        default="reentrant")
    parser.add_argument("--backward-thread", action="store_true",
                        help="run each backward on a thread of its own, as autograd runs CUDA "
                             "backward on its device threads")
    args = parser.parse_args()
    gpu = simgpu_torch.SimulatedGpu()
    torch.manual_seed(0)
    inputs = torch.randn(args.steps * 4, 6)
    labels = torch.randint(0, 3, (args.steps * 4,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels),
                                         batch_size=4)
    model = simulated_models.make_model(args.model, args.checkpoint)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    truth = Truth(gpu)
    truth.watch_modules(model, type(model).__name__ + "_0")
    truth.watch_modules(criterion, "CrossEntropyLoss_0")
    tag_checkpoints(truth)

    batches = iter(loader)
    trace = truth.trace
    with KernelPerOp(truth), TagNodes(truth):
        for step in range(args.steps):
            truth.loop_context = [DATALOADER]
            fetch_ns = time.monotonic_ns()
            x, y = next(batches)
            step_ns = time.monotonic_ns()
            trace.annotation(DATALOADER, fetch_ns, step_ns)
            truth.loop_context = [STEP, ZERO_GRAD]
            optimizer.zero_grad()
            trace.annotation(ZERO_GRAD, step_ns, time.monotonic_ns())
            truth.loop_context = [STEP]
            loss = criterion(model(x), y)
            if args.backward_thread:
                backward = threading.Thread(target=backward_on_this_thread,
                                            args=(truth, loss, model))
                backward.start()
                backward.join()
            else:
                loss.backward()
            truth.loop_context = [STEP, OPTIMIZER_STEP]
            optimizer_ns = time.monotonic_ns()
            optimizer.step()
            end_ns = time.monotonic_ns()
            trace.annotation(OPTIMIZER_STEP, optimizer_ns, end_ns)
            trace.annotation("ProfilerStep#%d" % step, step_ns, end_ns)
            truth.loop_context = []
    gpu.synchronize()
    truth.write(args.truth)
    if args.kineto:
        trace.write(args.kineto)
    if args.module_names:
        with open(args.module_names, "w") as out:
            json.dump(trace.module_names, out)
    print("kernels %d" % len(truth.activities))


if __name__ == "__main__":
    main()
