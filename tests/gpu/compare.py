"""Compares the real-GPU tier's outputs and writes the summary table (scripts/gpu-check.sh).

usage: compare.py OUTDIR   (OUTDIR holds what gpu-check.sh wrote: *.truth.json from the programs,
*.report.json from gpuattr run, *.import.json from gpuattr import of torch.profiler traces).
Writes OUTDIR/summary.md and OUTDIR/summary.json; exit 0 when every check that could run passed,
1 when one failed. A check whose inputs are missing is `not run` (null), never passed.
"""
import json
import os
import statistics
import sys

TOLERANCE = 0.02
COVERAGE_MIN = 0.95
OVERHEAD_MAX = 0.02
BYTE_RATIO = 11 / 3


def load(outdir, name):
    path = os.path.join(outdir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    return json.loads(text.splitlines()[-1]) if name.endswith(".truth.json") else json.loads(text)


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


def main():
    outdir = sys.argv[1]
    rows = []

    def row(check, value, target, ok):
        rows.append({"check": check, "value": value, "target": target,
                     "result": "not run" if ok is None else ("pass" if ok else "FAIL")})

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
            truth = load(outdir, "gpu_probe_all.truth.json")
            fam = families(rep).get("probe_graph_kernel")
            share = captured / fam if fam else None
            row("gpu_probe graph: captured_ns / probe_graph_kernel family", share, ">= 0.99",
                None if share is None else share >= 0.99)
            if truth:
                for op in truth["ops"]:
                    if op["kind"] == "kernel":
                        got = families(rep).get(op["name"])
                        truth_ns = op["ms"] * 1e6
                        row(f"gpu_probe {op['path']}: {op['name']} ns vs event span",
                            got, f"<= {truth_ns:.0f} (kernels inside the events)",
                            None if got is None else got <= truth_ns * (1 + TOLERANCE))
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
