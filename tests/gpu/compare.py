"""Compares the real-GPU tier's outputs and writes the summary table (scripts/gpu-check.sh).

usage: compare.py OUTDIR   (OUTDIR holds what gpu-check.sh wrote: *.truth.json from the programs,
*.report.json from gpuattr run, *.import.json from gpuattr import of torch.profiler traces).
Writes OUTDIR/summary.md and OUTDIR/summary.json; exit 0 when every check that could run passed,
1 when one failed. A check whose inputs are missing is `not run` (null), never passed.
"""
import json
import os
import sys

from compare_models import (COVERAGE_MIN, compiled_rows, cudagraph_rows, gpt_rows,
                            module_reference_rows, profiler_inside_rows)
from gpu_outputs import activities, load

TOLERANCE = 0.02
# Module device time of two runs of the same program (gpuattr run, torch.profiler): kernel
# durations differ from run to run by more than families' summed time does.
OVERHEAD_MAX = 0.02
BYTE_RATIO = 11 / 3


def union_ns(intervals):
    """Length of the union of [start, end) intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


PROBE_RUNS = ("chevron", "runtime", "driver", "streams", "memcpy", "memset", "graph", "nvtx", "all")


def probe_rows(outdir, row):
    """Each gpu_probe run against its own truth, exactly: per truth operation the activities of
    that kind (kernels also by name) attributed to its NVTX path, their count, their device time
    inside the program's event span, graph kernels `captured` with the replay as launch path; and
    each device's busy time against the union of the run's activities."""
    for sub in PROBE_RUNS:
        name = f"gpu_probe_{sub}"
        truth, report, acts = (load(outdir, f"{name}.truth.json"), load(outdir, f"{name}.report.json"),
                               activities(outdir, name))
        if truth is None or report is None or acts is None:
            row(f"{name}: activities against the program's truth", None, "exact counts", None)
            continue
        expected = {}  # (kind, kernel name or None, path) -> [count, event ms, captured]
        for op in truth["ops"]:
            key = (op["kind"], op["name"] if op["kind"] == "kernel" else None,
                   tuple(op["path"].split("/")) if op["path"] else ())
            entry = expected.setdefault(key, [0, 0.0, op["captured"]])
            entry[0] += op["count"]
            entry[1] += op["ms"]
        launch_path = truth.get("graph_launch_path", "").split("/")
        for (kind, kernel, path), (count, ms, captured) in sorted(expected.items(), key=str):
            got = [a for a in acts if a["kind"] == kind and tuple(a.get("path") or ()) == path
                   and (kernel is None or kernel in (a.get("name") or ""))]
            what = f"{name}: {kernel or kind} under {'/'.join(path) or '(no range)'}"
            row(f"{what}: count", f"{len(got)} of {count}", "equal", len(got) == count)
            device_ns = sum(a["end_ns"] - a["start_ns"] for a in got)
            row(f"{what}: device ns within the event span", device_ns, f"<= {ms * 1e6:.0f}",
                bool(got) and device_ns <= ms * 1e6 * (1 + TOLERANCE))
            if captured:
                ok = all(a["attribution"] == "captured" and a.get("launch_path") == launch_path
                         for a in got)
                row(f"{what}: captured, launched under {'/'.join(launch_path)}", ok, "true",
                    bool(got) and ok)
        for device in (report["processes"][0].get("devices") or []) if report["processes"] else []:
            union = union_ns([(a["start_ns"], a["end_ns"]) for a in acts
                              if a.get("device") == device["id"]])
            row(f"{name}: device {device['id']} busy_ns = union of its activities",
                f"{device['busy_ns']} vs {union}", "equal", device["busy_ns"] == union)


def families(report):
    return {f["family"]: f["total_ns"] for f in (report["summary"].get("families") or [])}


def walk(passes, prefix=()):
    for p in passes:
        path = tuple(p["path"]) if p.get("path") else prefix + (p["name"],)
        yield path, p
        yield from walk(p.get("children") or [], path)


def all_passes(report):
    for proc in report["processes"]:
        yield from walk(proc.get("passes") or [])


def pass_total(report, suffix):
    return sum((p.get("device") or {}).get("total_ns", 0)
               for path, p in all_passes(report) if path[-len(suffix):] == suffix)


def answer(questions, name, *fields):
    """The first JSON line a cupti_questions child printed for `name`, or None; None too when it
    lacks one of `fields` (a child whose CUPTI setup failed answers with its errors only)."""
    answers = questions.get("answers") if isinstance(questions, dict) else None
    child = (answers or {}).get(name) or {}
    lines = child.get("lines") or []
    first = lines[0] if lines and isinstance(lines[0], dict) else None
    return first if first is not None and all(f in first for f in fields) else None


def child_outcome(child):
    if not child:
        return "missing"
    if child.get("timed_out"):
        return "timed out"
    if child.get("signal") is not None:
        return f"signal {child['signal']}"
    return f"exit {child.get('exit')}"


def cupti_rows(questions, row, record):
    """cupti-notes §10: checks of what the simulated GPU assumes, then the other answers recorded."""
    launch = answer(questions, "launch_callbacks") or {}
    chevron = launch.get("<<<>>>")
    cbids = None if chevron is None else chevron.get("runtime_cbids_entered")
    row("§10.1 <<<>>> enters __cudaLaunchKernel (505), not 211 (simgpu: 505)", cbids, "[505]",
        None if cbids is None else (505 in cbids and 211 not in cbids))
    nested = None if chevron is None else chevron.get("nested_driver_same_corr")
    row("§10.1 nested driver launch callback shares the runtime id (simgpu default: same)",
        nested, "true", None if chevron is None else nested is True)
    sides = None if chevron is None else chevron.get("device_record_corr_is")
    row("§10.2 kernel record correlationId is the runtime call's (simgpu: runtime)", sides,
        "runtime", None if not sides else set(sides) <= {"runtime", "both"})
    for label in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx"):
        ev = launch.get(label)
        record(f"§10.1 {label}: runtime / driver cbids entered",
               None if ev is None else f"{ev['runtime_cbids_entered']} / {ev['driver_cbids_entered']}")
    copies = answer(questions, "memcpy_correlation") or {}
    for label in ("cudaMemcpy pageable HtoD", "cudaMemcpyAsync pinned HtoD",
                  "cudaMemcpyAsync pinned DtoH", "cudaMemsetAsync"):
        ev = copies.get(label)
        sides = None if ev is None else ev["device_record_corr_is"] + ev["memcpy_runtime_corr_field_is"]
        row(f"§10.2 {label}: record ids are the runtime call's (simgpu: runtime)", sides, "runtime",
            None if not sides else set(sides) <= {"runtime", "both"})
    graphs = answer(questions, "graphs", "kernel_graph_node_id_is")
    get = (lambda key: None) if graphs is None else graphs.get
    row("§10.3 graph kernel graphNodeId is the instantiated clone's (simgpu: clone)",
        get("kernel_graph_node_id_is"), "clone",
        None if get("kernel_graph_node_id_is") is None else get("kernel_graph_node_id_is") == "clone")
    row("§10.3 graph kernel graphId (simgpu: the clone graph's)", get("kernel_graph_id_is"),
        "clone_graph", None if get("kernel_graph_id_is") is None
        else "clone_graph" in get("kernel_graph_id_is"))
    row("§10.3 graph kernels carry the graph launch's correlation id (simgpu: yes)",
        get("kernel_corr_is_graph_launch_corr"), "true",
        None if get("kernel_corr_is_graph_launch_corr") is None
        else get("kernel_corr_is_graph_launch_corr") is True)
    row("§10.3 capture-time launches produce no records (simgpu: none)",
        get("capture_launches_produce_records"), "false",
        None if get("capture_launches_produce_records") is None
        else get("capture_launches_produce_records") is False)
    trace = answer(questions, "graph_trace", "graph_trace_enable_result")
    record("§10.3 with GRAPH_TRACE on: enable result, node-level kernel records, graph records",
           None if trace is None else f"{trace.get('graph_trace_enable_result')}, "
           f"{trace.get('graph_kernel_records_with_node_id')}, {len(trace.get('graph_trace_records', []))}")
    done = answer(questions, "completed", "kernels", "completed_equals_end")
    row("§10.4 kernel `completed` equals `end` (simgpu: equal)",
        None if done is None else f"{done['completed_equals_end']} of {done['kernels']}",
        "all", None if done is None else done["kernels"] > 0 and done["completed_equals_end"] == done["kernels"])
    threads = answer(questions, "buffer_threads", "buffers")
    if threads is None:
        record("§10.5 bufferCompleted threads", None)
    else:
        completes = [b for b in threads["buffers"] if b["event"] == "complete"]
        record("§10.5 bufferCompleted without a flush: threads",
               sorted({b["thread_name"] for b in completes if not b["during_flush"]}) or "none in 3 s")
        record("§10.5 bufferCompleted during a flush: on the flushing thread / other",
               f"{sum(b['count'] for b in completes if b['during_flush'] and b['on_main_thread'])} / "
               f"{sum(b['count'] for b in completes if b['during_flush'] and not b['on_main_thread'])}")
    injection = (questions or {}).get("answers", {}).get("injection")
    for case in ("ld_preload_only", "injection_path_returning_1", "injection_path_returning_0",
                 "both_naming_it"):
        c = None if injection is None else injection.get(case)
        kernel = None if c is None or not c["child"]["lines"] else c["child"]["lines"][0]["kernel_ran"]
        record(f"§10.6 {case}: InitializeInjection calls, kernel ran",
               None if c is None else f"{c['initialize_injection_calls']}, {kernel}")
    twice = answer(questions, "register_twice", "second_register_result")
    record("§10.7 second RegisterCallbacks: result, records to first / second",
           None if twice is None else f"{twice['second_register_result']}, "
           f"{twice['kernel_records_to_first']} / {twice['kernel_records_to_second']}")
    slot_child = (questions or {}).get("answers", {}).get("nvtx_slot")
    slot = answer(questions, "nvtx_slot", "subscribe_result")
    record("§10.8 NVTX_INJECTION64_PATH=libcupti, then cuptiSubscribe: result (39 = slot taken)",
           None if slot is None else f"{slot['subscribe_result']} {slot['old_subscriber_name']!r}")
    # Survived: its own second line; a crash there: the signal; neither: not known.
    name_os_thread = None
    if slot_child is not None:
        name_os_thread = ("survived" if len(slot_child.get("lines") or []) > 1
                          else None if child_outcome(slot_child) == "exit 0"
                          else child_outcome(slot_child))
    record("§10.8 nvtxNameOsThreadA with libcupti as NVTX injection (NVIDIA/NVTX#125)",
           name_os_thread)
    chain = (questions or {}).get("answers", {}).get("nvtx_chain")
    chained = None if chain is None else (chain["child"]["lines"] or [None])[0]
    record("§10.8 chaining through cuptiNvtxInitialize2 beside one's own handler",
           None if chain is None else (chained["chaining_works"] if chained
                                       else child_outcome(chain["child"])))
    again = answer(questions, "reattach", "session_1_corr_matches")
    record("§10.9 graph correlation after cuptiFinalize + re-attach: session 1 / old graph / new graph",
           None if again is None else f"{again['session_1_corr_matches']} / "
           f"{again['session_2_old_graph_corr_matches']} / {again['session_2_new_graph_corr_matches']}")
    for name, child in ((questions or {}).get("answers") or {}).items():
        if isinstance(child, dict) and "lines" in child and child_outcome(child) != "exit 0":
            record(f"cupti_questions {name}: child", child_outcome(child))


MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def profiler_flops(trace):
    """FLOPs of the matrix products in a torch.profiler trace recorded with_flops, by op name."""
    by_op = {}
    for event in (trace or {}).get("traceEvents", []):
        flops = (event.get("args") or {}).get("flops")
        if event.get("cat") == "cpu_op" and event.get("name") in MATMUL_OPS and flops:
            by_op[event["name"]] = by_op.get(event["name"], 0) + flops
    return by_op


def flops_rows(outdir, row, record):
    run = load(outdir, "torch_modules_flops.report.json")
    processes = [] if run is None else run.get("processes") or []
    work = (processes[0].get("work") or {}) if processes else {}
    mfu = work.get("mfu") or {}
    record("torch_modules_flops: MFU (%s, %s)" % (mfu.get("dtype"), mfu.get("peak_source")),
           mfu.get("value"))
    record("torch_modules_flops: clean step ns (bare run) vs instrumented",
           None if mfu.get("clean_step_ns") is None
           else "%s vs %s" % (mfu.get("clean_step_ns"), mfu.get("instrumented_step_ns")))
    achieved = (work.get("achieved") or {})
    row("torch_modules_flops: device join gate for achieved FLOP/s", achieved.get("gate_passed"),
        "passed", None if not work else achieved.get("gate_passed") is True)
    ours = {op["op"]: op["flops"] for op in (work.get("ops") or {}).get("counted", [])
            if op["op"] in MATMUL_OPS}
    trace = load(outdir, "torch_modules_lesson.torch_trace.json")
    theirs = profiler_flops(trace)
    if not ours or not theirs:
        row("torch_modules_flops: matmul FLOPs vs torch.profiler with_flops", None, "equal", None)
        return
    ratio = sum(ours.values()) / sum(theirs.values())
    row("torch_modules_flops: matmul FLOPs / torch.profiler with_flops (%s)" % sorted(theirs),
        ratio, "1.0 (same steps)", abs(ratio - 1.0) < 1e-9)


def late_attach_rows(outdir, row, record):
    """Issue 23: two windows of a PyTorch job started without gpuattr, the shim loaded by ptrace."""
    stderr_path = os.path.join(outdir, "late_attach.stderr")
    stops = []
    if os.path.exists(stderr_path):
        stops = [line.strip() for line in open(stderr_path) if "was stopped for" in line]
    record("late attach: the injected thread's stop", "; ".join(stops) or None)
    for window in (1, 2):
        report = load(outdir, f"late_attach.{window}.json")
        process = (report.get("processes") or [{}])[0] if report else None
        if not process:
            row(f"late attach window {window}: complete with kernels", None, "complete, > 0", None)
            continue
        kernels = (process.get("totals") or {}).get("kernels")
        row(f"late attach window {window}: status, kernels", f"{process.get('status')}, {kernels}",
            "complete, > 0", process.get("status") == "complete" and bool(kernels))
        window_json = process.get("window") or {}
        row(f"late attach window {window}: late_attach, detach",
            f"{window_json.get('late_attach')}, {window_json.get('detach')}", "True, finalized",
            window_json.get("late_attach") is True and window_json.get("detach") == "finalized")
        names = sorted({d.get("name") for d in process.get("devices") or []} - {None})
        row(f"late attach window {window}: devices named through the driver API",
            ", ".join(names) or None, "the GPU's name", bool(names))
        record(f"late attach window {window}: refusals",
               ", ".join(r["code"] for r in process.get("refusals") or []) or None)


def main():
    outdir = sys.argv[1]
    rows = []

    def row(check, value, target, ok):
        rows.append({"check": check, "value": value, "target": target,
                     "result": "not run" if ok is None else ("pass" if ok else "FAIL")})

    def record(check, value):
        rows.append({"check": check, "value": value, "target": "answer recorded",
                     "result": "not run" if value is None else "recorded"})

    # 1. Per-family device time: gpuattr run vs gpuattr import of torch.profiler, same workload.
    for script in ("torch_lesson", "torch_train"):
        run, imp = load(outdir, f"{script}.report.json"), load(outdir, f"{script}.import.json")
        if run is None or imp is None:
            row(f"{script}: family time vs torch.profiler", None, f"within {TOLERANCE:.0%}", None)
            continue
        a, b = families(run), families(imp)
        for fam in sorted(set(a) & set(b), key=lambda k: -b[k])[:10]:
            rel = abs(a[fam] - b[fam]) / b[fam] if b[fam] else None
            row(f"{script}: {fam}", None if rel is None else f"{rel:.3%}",
                f"within {TOLERANCE:.0%}", None if rel is None else rel <= TOLERANCE)
        only = sorted(set(a) ^ set(b))
        row(f"{script}: families in only one report", ", ".join(only[:8]) or "none", "none",
            not only)

    # 2. Backward coverage with inheritance.
    train = load(outdir, "torch_train.report.json")
    cov = None if train is None else (train["summary"]["coverage"].get("by_phase") or {}).get("backward")
    row("torch_train: coverage.by_phase.backward", cov, f">= {COVERAGE_MIN}",
        None if cov is None else cov >= COVERAGE_MIN)

    # 3. Graph kernels attributed to their capture ranges.
    for name in ("torch_train_graph", "gpu_probe_all"):
        rep = load(outdir, f"{name}.report.json")
        if rep is None:
            row(f"{name}: captured share of kernel time", None, ">= 0.95 of graph kernels", None)
            continue
        captured = sum((p.get("attribution") or {}).get("captured_ns", 0) for _, p in all_passes(rep))
        if name == "gpu_probe_all":
            fam = families(rep).get("probe_graph_kernel")
            share = captured / fam if fam else None
            row("gpu_probe graph: captured_ns / probe_graph_kernel family", share, ">= 0.99",
                None if share is None else share >= 0.99)
        else:
            kernel_ns = rep["summary"]["totals"].get("kernel_ns")
            share = captured / kernel_ns if kernel_ns else None
            row(f"{name}: captured_ns / kernel_ns", share, ">= 0.95",
                None if share is None else share >= 0.95)

    # 4. Eager chain vs fused kernel, against the byte ratio 11:3.
    lesson = load(outdir, "torch_lesson.report.json")
    if lesson is not None:
        eager, fused = pass_total(lesson, ("eager",)), pass_total(lesson, ("fused",))
        ratio = eager / fused if fused else None
        row("torch_lesson: eager/fused device time", ratio, f"vs byte ratio {BYTE_RATIO:.2f} (recorded)",
            None if ratio is None else ratio > 1.0)
    else:
        row("torch_lesson: eager/fused device time", None, f"vs byte ratio {BYTE_RATIO:.2f}", None)

    # 5. Per-step overhead: median step time (CUDA events) with and without gpuattr.
    for name in ("gpu_probe_steps", "torch_train", "torch_lesson"):
        bare, traced = load(outdir, f"{name}.bare.truth.json"), load(outdir, f"{name}.truth.json")
        if bare is None or traced is None:
            row(f"{name}: per-step overhead", None, f"< {OVERHEAD_MAX:.0%}", None)
            continue
        b, t = bare["step_median_ms"], traced["step_median_ms"]
        over = (t - b) / b
        row(f"{name}: per-step overhead ({b:.3f} -> {t:.3f} ms)", f"{over:.2%}",
            f"< {OVERHEAD_MAX:.0%}", over < OVERHEAD_MAX)

    # 6. The Python annotator on unannotated PyTorch: gpuattr's modules rows against the
    # reference torch.profiler's key_averages gives of the same program (torch_modules.py); and
    # that program with its torch.profiler session inside `gpuattr run` (issue 43).
    for model in ("lesson", "checkpointed"):
        name = f"torch_modules_{model}"
        truth = load(outdir, f"{name}.profiler.truth.json")
        module_reference_rows(row, name, load(outdir, f"{name}.report.json"),
                              None if truth is None else truth.get("reference"))
    profiler_inside_rows(outdir, row)

    # 7. FLOPs and MFU (issue 22): the lesson model under --flops --clean-steps; its matrix
    # products' FLOPs against torch.profiler's with_flops figures for the same program and steps.
    flops_rows(outdir, row, record)

    # 8. Every gpu_probe run against its own truth.
    probe_rows(outdir, row)

    # 9. Late attach into a PyTorch job started without gpuattr (issue 23).
    late_attach_rows(outdir, row, record)

    # 10. cupti-notes §10, from cupti_questions.
    cupti_rows(load(outdir, "cupti_questions.json"), row, record)

    # 11. The demo's GPT (issue 40), eager and torch.compile'd, under gpuattr run and bare; and
    # compiled with mode="reduce-overhead", its graphs replayed as CUDA graphs (issue 42).
    gpt_rows(outdir, row, record)
    compiled_rows(outdir, row, record)
    cudagraph_rows(outdir, row)

    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("| check | value | target | result |\n|---|---|---|---|\n")
        for r in rows:
            v = r["value"]
            v = "null" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
            f.write(f"| {r['check']} | {v} | {r['target']} | {r['result']} |\n")
    sys.stdout.write(open(os.path.join(outdir, "summary.md")).read())
    return 1 if any(r["result"] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
