"""compare.py's rows for whole PyTorch models (scripts/gpu-check.sh): the annotator's module rows
against torch.profiler's key_averages (issue 19), the lesson model with its own torch.profiler
session under gpuattr run (issue 43), and the demo's GPT, eager and torch.compile'd and with CUDA
graphs (issues 40 and 42). Each takes compare.py's `row` (and `record`) callbacks.
"""
import json
import os

from gpu_outputs import activities, load

COVERAGE_MIN = 0.95
MODULE_TOLERANCE = 0.10


def module_reference_rows(row, name, run, reference):
    """gpuattr's modules rows (report `run`) against torch.profiler's key_averages per module path
    (`reference`, torch_modules.py's): forward (with recompute) and backward, each within
    MODULE_TOLERANCE."""
    if run is None or not reference:
        row(f"{name}: module device time vs key_averages", None,
            f"within {MODULE_TOLERANCE:.0%}", None)
        return
    rows_by_path = {}
    for process in run["processes"]:
        for module in process.get("modules") or []:
            path = "/".join(n[len("nn.Module: "):] if n.startswith("nn.Module: ") else n
                            for n in module["path"])
            rows_by_path[path] = module
    for path, expected in sorted(reference.items()):
        live = rows_by_path.get(path)
        for term, value in (("forward", expected["forward_ns"]),
                            ("backward", expected["backward_ns"])):
            if value is None or value == 0:
                continue  # no kernel of its own, or not separable by node type
            got = None if live is None else (
                live["forward_ns"] + live["recompute_ns"] if term == "forward"
                else live["backward_ns"])
            rel = None if got is None else abs(got - value) / value
            row(f"{name}: {path} {term} ({value} ns)",
                None if rel is None else f"{rel:.3%}", f"within {MODULE_TOLERANCE:.0%}",
                None if rel is None else rel <= MODULE_TOLERANCE)


def _trace_kernels(outdir, name):
    path = os.path.join(outdir, f"{name}.torch_trace.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return sum(1 for event in json.load(f).get("traceEvents", [])
                   if event.get("cat") == "kernel")


def profiler_inside_rows(outdir, row):
    """Issue 43: the lesson model with a torch.profiler session inside it, under gpuattr run. Both
    must be complete: gpuattr's report whole and its module rows held to that same run's
    key_averages; the profiler's trace with every kernel a run without gpuattr has, and its
    key_averages per module as in that run (torch_modules_lesson's profiled run)."""
    name = "torch_profiler_inside"
    run = load(outdir, f"{name}.report.json")
    process = None if run is None or not run["processes"] else run["processes"][0]
    whole = None if process is None else (
        process["status"] == "complete" and process["loss"]["dropped_records"] == 0)
    row(f"{name}: gpuattr's report complete, nothing dropped",
        None if process is None else process["status"], "complete, 0 dropped", whole)
    truth = load(outdir, f"{name}.truth.json")
    inside = None if truth is None else truth.get("reference")
    module_reference_rows(row, name, run, inside)
    inside_kernels = _trace_kernels(outdir, name)
    bare_kernels = _trace_kernels(outdir, "torch_modules_lesson")
    row(f"{name}: kernels in torch.profiler's trace vs a run without gpuattr",
        None if inside_kernels is None or bare_kernels is None
        else f"{inside_kernels} vs {bare_kernels}", "equal, not 0",
        None if inside_kernels is None or bare_kernels is None
        else inside_kernels == bare_kernels > 0)
    bare_truth = load(outdir, "torch_modules_lesson.profiler.truth.json")
    bare = None if bare_truth is None else bare_truth.get("reference")
    if not inside or not bare:
        row(f"{name}: key_averages per module vs a run without gpuattr", None,
            f"within {MODULE_TOLERANCE:.0%}", None)
        return
    for path, expected in sorted(bare.items()):
        for term in ("forward", "backward"):
            value = expected[f"{term}_ns"]
            if not value:
                continue
            got = (inside.get(path) or {}).get(f"{term}_ns")
            rel = None if got is None else abs(got - value) / value
            row(f"{name}: key_averages {path} {term} vs without gpuattr ({value} ns)",
                None if rel is None else f"{rel:.3%}", f"within {MODULE_TOLERANCE:.0%}",
                None if rel is None else rel <= MODULE_TOLERANCE)


def gpt_rows(outdir, row, record):
    """Issue 40: the traced GPT prints the bare run's losses (recorded: CUDA's atomic adds may
    change a last digit of either run), has one module row per module, and, compiled, dynamo
    counts no graph break or recompile that the bare compiled run does not."""
    def stdout_of(name):
        path = os.path.join(outdir, name)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read().splitlines()

    for name in ("torch_gpt", "torch_gpt_compiled"):
        bare, traced = stdout_of(f"{name}.bare.truth.json"), stdout_of(f"{name}.truth.json")
        losses = None if bare is None or traced is None else (
            [line for line in bare if line.startswith("loss")] ==
            [line for line in traced if line.startswith("loss")])
        record(f"{name}: losses under gpuattr run equal the bare run's", losses)
        if name == "torch_gpt_compiled":
            dynamo = None if bare is None or traced is None else (
                [line for line in bare if line.startswith("dynamo ")] ==
                [line for line in traced if line.startswith("dynamo ")] != [])
            row(f"{name}: dynamo graph breaks and recompiles vs bare", dynamo, "equal", dynamo)
    run = load(outdir, "torch_gpt.report.json")
    modules = None if run is None else [
        module["module"] for process in run["processes"] for module in process.get("modules") or []]
    row("torch_gpt: one module row per module", None if modules is None else len(modules),
        "no module twice", None if not modules else len(modules) == len(set(modules)))


def compiled_rows(outdir, row, record):
    """Issue 42: the compiled GPT's kernels attributed by module, and its Triton kernels the ones
    torch.profiler saw in a run of its own."""
    name = "torch_gpt_compiled"
    module_rows(outdir, row, name)
    # The profiled run's trace, imported with the kernel maps the traced run kept.
    module_rows(outdir, row, name, "import", " (torch.profiler, imported with kernel maps)")
    ours = activities(outdir, name)
    trace_path = os.path.join(outdir, f"{name}.torch_trace.json")
    theirs = None
    if os.path.exists(trace_path):
        with open(trace_path) as f:
            trace = json.load(f)
        theirs = {event["name"] for event in trace.get("traceEvents", [])
                  if event.get("cat") == "kernel" and event.get("name", "").startswith("triton_")}
    mine = None if ours is None else {
        activity["name"] for activity in ours
        if (activity.get("name") or "").startswith("triton_")}
    same = None if mine is None or theirs is None else mine == theirs
    row(f"{name}: Triton kernels vs torch.profiler's",
        None if same is None else f"{len(mine)} here, {len(theirs)} there", "the same names", same)


def module_rows(outdir, row, name, report="report", label=""):
    """A compiled GPT's kernels attributed by module (NAME.REPORT.json, its rows' names NAME
    LABEL): every Linear of every block with forward and backward time, coverage, and no graph
    left without a kernel map."""
    run = load(outdir, f"{name}.{report}.json")
    name += label
    process = None if run is None or not run["processes"] else max(
        run["processes"], key=lambda p: (p.get("totals") or {}).get("kernel_ns") or 0)
    linears = [f"nn.Module: h.{block}.{linear}" for block in (0, 1)
               for linear in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")]
    rows_by_module = None if process is None else {
        module["module"]: module for module in process.get("modules") or []}
    both = None if rows_by_module is None else [
        module for module in linears if module in rows_by_module and
        rows_by_module[module]["forward_ns"] > 0 and rows_by_module[module]["backward_ns"] > 0]
    row(f"{name}: Linears with forward and backward time", None if both is None else len(both),
        f"all {len(linears)}", None if both is None else len(both) == len(linears))
    fraction = None if process is None else process["coverage"]["attributed_fraction"]
    row(f"{name}: coverage", fraction, f">= {COVERAGE_MIN}",
        None if fraction is None else fraction >= COVERAGE_MIN)
    unmapped = None if process is None else [
        mark for mark in process.get("marks") or []
        if "has no kernel map" in json.dumps(mark)]
    row(f"{name}: graphs without a kernel map", None if unmapped is None else len(unmapped), "0",
        None if unmapped is None else not unmapped)


def cudagraph_rows(outdir, row):
    """Issue 42, mode="reduce-overhead": cudagraph trees capture each graph's wrapper call once,
    inside its range, and replay the CUDA graph without calling the wrapper again; the replayed
    kernels must be placed below their graph's range as the captured call's were."""
    name = "torch_gpt_cudagraphs"
    module_rows(outdir, row, name)
    ours = activities(outdir, name)
    replayed = None if ours is None else [
        activity for activity in ours
        if activity.get("graph_node") is not None and activity.get("kind") == "kernel"]
    placed = None if replayed is None else [
        activity for activity in replayed if _below_graph_range(activity.get("path") or [])]
    fraction = None if not replayed else len(placed) / len(replayed)
    row(f"{name}: replayed kernels placed below their graph's range",
        None if replayed is None else f"{len(placed)} of {len(replayed)}",
        f">= {COVERAGE_MIN} of some", None if replayed is None else (
            fraction is not None and fraction >= COVERAGE_MIN))


def _below_graph_range(path):
    """Whether a path goes on below a compiled graph's range (`torch.compile: <key> forward`)."""
    ranges = [at for at, name in enumerate(path) if name.startswith("torch.compile: ")]
    return bool(ranges) and ranges[-1] < len(path) - 1
