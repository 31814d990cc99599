#!/usr/bin/python3
"""An independent computation of the phase terms gpuattr import reports for a Kineto trace.

docs/attribution.md, written again from the text in stdlib Python over the raw JSON, without any
of the collector's code or data files: the report must agree with it to the nanosecond
(tests/component/import_test.cpp). Default options (--ranges annotations, inheritance on).

  - ranges: user_annotation X events, cpu_op / Operator X events named ProfilerStep#N, and
    python_function X events named "nn.Module: ..." or "...checkpoint.py(N): recompute_fn", per
    (pid, tid); sorted by (start, longer first, the model's ranges first); a range that starts
    inside another but ends after it is clipped to the enclosing range's end; a range encloses
    [start, end);
  - the PyTorch model (docs/attribution.md §PyTorch), in a process with module ranges: its main
    thread holds ProfilerStep#N, else the most module ranges (the smaller tid at ties); each
    backward op (cpu_op "autograd::engine::evaluate_function: ...") not inside another on its
    thread gets ranges of its own interval: off the main thread, the main thread's ranges open at
    its start, up to the first module; then, when its forward op is known, the ranges open on the
    forward op's thread at the forward op's start from the first module on, and "backward"; else
    "backward_unlinked". The forward op: the fwdbwd flow whose finish (on the backward op's
    thread) is earliest within the backward op names by its id the start point; else the latest
    cpu_op on the main thread with the backward op's "Sequence number" starting at or before it;
  - launches: runtime and driver X events with args.correlation; per (pid, correlation) the
    earliest one (file order at ties); an activity's process is that of the first call in file
    order with its correlation id, else the process with the most runtime and driver calls;
  - attribution: the launch thread's innermost open range at the launch's start, else the main
    thread's (the thread of the process's earliest range; the smaller tid at ties), else none;
  - phase: of the innermost range of the path whose whole name matches a phase pattern
    (case-insensitive; first of forward, backward, recompute, optimizer, loss, communication),
    a forward range under a backward-matching one being recompute; a kernel named like an
    NCCL/RCCL collective is communication whatever its path; a launch from a thread other than
    the main one on which a range with a backward phase began at or after the start of the main
    thread's outermost range open at the launch and at or before the launch, is backward when it
    took the main thread's path or its own path has no phase.

And per device of each process (docs/attribution.md §Compute, communication and memory): the busy
unions of collective kernels, other kernels, and copies and sets over all its streams (device
from args.device else pid, stream from args.stream else tid), hidden communication = |comm ∩
compute|, exposed = comm - hidden, and each stream's idle time (its first start to its last end,
less its union), and its memory copies by direction and memory kinds as the name of each
gpu_memcpy event writes them ("Memcpy HtoD (Pageable -> Device)"): count, time and bytes.

Prints {"<pid>": {"phases": {"forward_ns": N, ..., "other_ns": N, "unattributed_ns": N},
"devices": {"<device>": {"compute_ns": N, ..., "streams": {"<stream>": idle_ns},
"copies": {"HtoD/pageable/device": {"copies": N, "ns": N, "bytes": N}}}},
"steps": [{"compute_busy_ns": N, ...}]}} on stdout, steps being the ProfilerStep#N ranges by start
with the category unions over all the process's devices clipped to each.
With --ranges-ops (gpuattr import --ranges ops), every cpu_op event is a range too.
Usage: pytorch_phase_reference.py TRACE.json[.gz] [--ranges-ops]
"""

import bisect
import decimal
import gzip
import json
import re
import sys

PHASES = ["forward", "backward", "recompute", "optimizer", "loss", "communication"]
# The table of docs/attribution.md §Phases.
PATTERNS = {
    "forward": [r"forward", r"fwd", r"forward[_.:# ].*", r".*[_.:# ]forward",
                r"##\s*forward([_.:# ].*)?##", r"CompiledFunction", r"nn\.Module: (?!.*Loss(_\d+)?$).*"],
    "backward": [r"backward", r"bwd", r"backward[_.:# ].*", r".*[_.:# ]backward",
                 r"autograd::engine::evaluate_function.*", r"##\s*backward([_.:# ].*)?##",
                 r"CompiledFunctionBackward"],
    "recompute": [r"recompute", r"recompute[_.:# ].*", r"checkpoint", r"activation_checkpoint.*",
                  r".*checkpoint\.py\(\d+\): recompute_fn"],
    "optimizer": [r"optimizer", r"optim", r"optimizer[_.:# ].*", r"optimizer\.step.*",
                  r"optimizer_step", r"Optimizer\.step#.*", r"Optimizer\.zero_grad#.*",
                  r"##\s*optimizer([_.:# ].*)?##", r"##\s*zero_grad\s*##"],
    "loss": [r"loss", r"loss[_.:# ].*", r".*[_.:# ]loss", r"criterion", r"##\s*loss([_.:# ].*)?##",
             r"nn\.Module: .*Loss(_\d+)?",
             r"nn\.functional\.(\w*_loss|cross_entropy|binary_cross_entropy\w*|kl_div)",
             r"aten::(?!\w*backward)(\w*_loss\w*|nll_loss\w*|cross_entropy\w*|"
             r"binary_cross_entropy\w*|kl_div)"],
    "communication": [r"nccl:.*", r"rccl:.*", r"record_param_comms", r"c10d::.*"],
}
COMPILED = {phase: [re.compile(p, re.IGNORECASE | re.DOTALL) for p in patterns]
            for phase, patterns in PATTERNS.items()}
COLLECTIVE = re.compile(r"^(?:void )?nccl(?:Dev)?Kernel_")
DEVICE = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
API = {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}


def ns(value):
    """Microseconds (exact decimal) to integer nanoseconds, sub-nanosecond digits truncated."""
    return int(decimal.Decimal(value) * 1000)


def phase_of_name(name, cache={}):
    if name not in cache:
        cache[name] = [p for p in PHASES if any(r.fullmatch(name) for r in COMPILED[p])]
    return cache[name]


def phase_of_path(path):
    matches = [phase_of_name(name) for name in path]
    for i in range(len(path) - 1, -1, -1):
        if not matches[i]:
            continue
        phase = matches[i][0]
        if phase == "forward" and any("backward" in m for m in matches[:i]):
            return "recompute"
        return phase
    return None


class Thread:
    """A thread's ranges, nested and clipped, in push order: (start, end, path)."""

    def __init__(self, ranges):
        # (start, end, name, order): order sorts the model's ranges (negative) before the file's.
        ranges.sort(key=lambda r: (r[0], -r[1], r[3]))
        self.opened = []
        stack = []
        for start, end, name, _ in ranges:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                end = stack[-1][1]
            # The path as ((name, end), ...) from the outermost range.
            path = (stack[-1][2] if stack else ()) + ((name, end),)
            stack.append((start, end, path))
            self.opened.append((start, end, path))
        self.starts = [r[0] for r in self.opened]
        self.top = [(start, end) for start, end, path in self.opened if len(path) == 1]
        self.top_starts = [start for start, _ in self.top]
        self.backward_starts = [start for start, _, path in self.opened
                                if phase_of_path([name for name, _ in path]) == "backward"]

    def outermost_start(self, t):
        """The start of the outermost range enclosing t, or None."""
        i = bisect.bisect_right(self.top_starts, t) - 1
        if i >= 0 and self.top[i][0] <= t < self.top[i][1]:
            return self.top[i][0]
        return None

    def began_backward(self, since, t):
        """Whether a backward-phase range of this thread starts in [since, t]."""
        i = bisect.bisect_right(self.backward_starts, t) - 1
        return i >= 0 and self.backward_starts[i] >= since

    def ranges_at(self, t):
        """((name, end), ...) of the innermost range enclosing t and those it nests in."""
        for i in range(bisect.bisect_right(self.starts, t) - 1, -1, -1):
            start, end, path = self.opened[i]
            if start <= t < end:
                return path
        return ()

    def path_at(self, t):
        """The names of the innermost range enclosing t and of those it nests in."""
        return tuple(name for name, _ in self.ranges_at(t))


def is_module(name):
    return name.startswith("nn.Module: ")


def first_module(names):
    return next((i for i, name in enumerate(names) if is_module(name)), len(names))


def add_model_ranges(ranges, backward_ops, sequenced, flows):
    """The PyTorch model's ranges, appended to ranges[(pid, tid)] with negative orders."""
    pids = {pid for (pid, _), rs in ranges.items() if any(is_module(r[2]) for r in rs)}
    threads = {key: Thread(list(value)) for key, value in ranges.items()}
    order = -10 ** 12
    for pid in sorted(pids):
        tids = {tid for (p, tid) in ranges if p == pid}
        steps = [tid for tid in sorted(tids)
                 if any(r[2].startswith("ProfilerStep#") for r in ranges[(pid, tid)])]
        main = steps[0] if steps else max(
            sorted(tids), key=lambda tid: sum(is_module(r[2]) for r in ranges[(pid, tid)]))
        starts = {}
        for fpid, tid, ts, fid, kind in flows:
            if kind == "s" and fpid == pid:
                starts.setdefault(fid, (tid, ts))
        by_sequence = {}
        for opid, tid, start, sequence in sequenced:
            if opid == pid and tid == main:
                by_sequence.setdefault(sequence, []).append(start)
        ops = sorted((op for op in backward_ops if op[0] == pid), key=lambda o: (o[1], o[2], -o[3]))
        last = None
        for _, tid, start, end, sequence in ops:
            if last and last[0] == tid and start < last[1]:
                continue
            last = (tid, end)
            names = []
            finishes = sorted(ts for fpid, ftid, ts, fid, kind in flows
                              if kind == "f" and fpid == pid and ftid == tid and
                              start <= ts <= end and fid in starts)
            forward = None
            if finishes:
                fid = next(f[3] for f in sorted(flows, key=lambda f: f[2])
                           if f[4] == "f" and f[0] == pid and f[1] == tid and f[2] == finishes[0]
                           and f[3] in starts)
                forward = starts[fid]
            elif sequence is not None and sequence in by_sequence:
                before = [t for t in by_sequence[sequence] if t <= start]
                if before:
                    forward = (main, max(before))
            if forward is None:
                if tid != main:
                    context = threads[(pid, main)].path_at(start) if (pid, main) in threads else ()
                    names += context[:first_module(context)]
                names.append("backward_unlinked")
            else:
                # The forward op's ranges still open at the backward op's start (unless on its own
                # thread), and those from its first module to its last.
                path = threads[(pid, forward[0])].ranges_at(forward[1]) if (
                    (pid, forward[0]) in threads) else ()
                modules = [i for i, (name, _) in enumerate(path) if is_module(name)]
                for i, (name, open_until) in enumerate(path):
                    if (modules and modules[0] <= i <= modules[-1]) or (
                            open_until > start and forward[0] != tid):
                        names.append(name)
                names.append("backward")
            for name in names:
                ranges.setdefault((pid, tid), []).append((start, end, name, order))
                order += 1


def main():
    ranges_ops = sys.argv[2:] == ["--ranges-ops"]
    opener = gzip.open if sys.argv[1].endswith(".gz") else open
    with opener(sys.argv[1], "rt") as file:
        data = json.load(file, parse_float=decimal.Decimal)
    events = data["traceEvents"] if isinstance(data, dict) else data
    ranges = {}  # (pid, tid) -> [(start, end, name, index)]
    calls = {}  # (pid, correlation) -> (start, file index, tid)
    pid_of_correlation = {}
    calls_per_pid = {}
    activities = []
    backward_ops = []  # (pid, tid, start, end, sequence or None)
    sequenced = []  # (pid, tid, start, sequence): other cpu_ops with a sequence number
    flows = []  # (pid, tid, ts, id, "s" | "f"): fwdbwd
    copies = {}  # (device, (direction, src, dst)) -> [(ns, bytes)]
    for index, e in enumerate(events):
        if e.get("cat") == "fwdbwd" and e.get("ph") in ("s", "f"):
            flows.append((e["pid"], e["tid"], ns(e["ts"]), e["id"], e["ph"]))
            continue
        if e.get("ph") != "X" or not isinstance(e.get("cat"), str):
            continue
        cat, name = e["cat"], e.get("name", "")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        start = ns(e["ts"])
        end = start + ns(e.get("dur", 0))
        sequence = args.get("Sequence number")
        sequence = sequence if isinstance(sequence, int) and 0 <= sequence < 2 ** 63 else None
        if cat == "cpu_op" and name.startswith("autograd::engine::evaluate_function: "):
            backward_ops.append((e["pid"], e["tid"], start, end, sequence))
        elif cat == "cpu_op" and sequence is not None:
            sequenced.append((e["pid"], e["tid"], start, sequence))
        if cat == "user_annotation" or (cat in ("cpu_op", "Operator") and (
                ranges_ops or name.startswith("ProfilerStep#"))) or (
                cat == "python_function" and (
                    is_module(name) or re.fullmatch(r".*checkpoint\.py\(\d+\): recompute_fn", name))):
            ranges.setdefault((e["pid"], e["tid"]), []).append((start, end, name, index))
        elif cat in API:
            calls_per_pid[e["pid"]] = calls_per_pid.get(e["pid"], 0) + 1
            if not isinstance(args.get("correlation"), int):
                continue
            key = (e["pid"], args["correlation"])
            pid_of_correlation.setdefault(args["correlation"], e["pid"])
            if key not in calls or start < calls[key][0]:
                calls[key] = (start, index, e["tid"])
        elif cat in DEVICE:
            if cat in ("gpu_memcpy", "Memcpy"):
                # "Memcpy HtoD (Pageable -> Device)": direction, source and destination kinds.
                words = re.fullmatch(r"Memcpy (\w+) \((\w+) -> (\w+)\)", name)
                key = (words.group(1), words.group(2).lower(), words.group(3).lower()) if (
                    words) else ("unknown", "unknown", "unknown")
                copies.setdefault((args.get("device", e.get("pid")), key), []).append(
                    (end - start, args.get("bytes", 0)))
            kernel = cat in ("kernel", "Kernel")
            category = ("memory" if not kernel else
                        "communication" if COLLECTIVE.search(name) else "compute")
            activities.append((args.get("correlation"), start, end, category,
                               args.get("device", e.get("pid")), args.get("stream", e.get("tid"))))
    add_model_ranges(ranges, backward_ops, sequenced, flows)
    threads = {key: Thread(list(value)) for key, value in ranges.items()}
    main_tid = {}
    for (pid, tid), thread in sorted(threads.items()):
        first = thread.opened[0][0]
        if pid not in main_tid or first < main_tid[pid][0]:
            main_tid[pid] = (first, tid)
    # Device work whose correlation id no call has belongs to the process with the most calls.
    default_pid = max(sorted(calls_per_pid), key=lambda pid: calls_per_pid[pid], default=None)
    out = {}
    intervals = {}  # (pid, device) -> category -> [(start, end)], and (pid, device, stream)
    for correlation, start, end, category, device, stream in activities:
        duration = end - start
        pid = pid_of_correlation.get(correlation, default_pid)
        intervals.setdefault((pid, device), {}).setdefault(category, []).append((start, end))
        intervals.setdefault((pid, device, stream), {}).setdefault("all", []).append((start, end))
        entry = out.setdefault(str(pid), {"phases": {p + "_ns": 0 for p in
                                                     PHASES + ["other", "unattributed"]},
                                          "devices": {}})
        terms = entry["phases"]
        call = calls.get((pid, correlation))
        path = ()
        inherited = False
        backward_thread = False
        if call is not None:
            launch_ns, _, tid = call
            if (pid, tid) in threads:
                path = threads[(pid, tid)].path_at(launch_ns)
            if pid in main_tid:
                main = threads[(pid, main_tid[pid][1])]
                if not path:
                    path = main.path_at(launch_ns)
                    inherited = True
                step_start = main.outermost_start(launch_ns)
                backward_thread = (tid != main_tid[pid][1] and (pid, tid) in threads and
                                   step_start is not None and
                                   threads[(pid, tid)].began_backward(step_start, launch_ns))
        if not path:
            terms["unattributed_ns"] += duration
            continue
        phase = phase_of_path(path)
        if category == "communication":
            phase = "communication"
        elif backward_thread and (inherited or phase is None):
            phase = "backward"
        terms[(phase or "other") + "_ns"] += duration
    for key, by_category in sorted(intervals.items(), key=lambda item: str(item[0])):
        devices = out[str(key[0])]["devices"]
        if len(key) == 2:
            compute = by_category.get("compute", [])
            communication = by_category.get("communication", [])
            hidden = (union(compute) + union(communication) - union(compute + communication))
            devices.setdefault(str(key[1]), {"streams": {}}).update({
                "compute_ns": union(compute),
                "communication_ns": union(communication),
                "memory_ns": union(by_category.get("memory", [])),
                "communication_hidden_ns": hidden,
                "communication_exposed_ns": union(communication) - hidden})
        else:
            spans = by_category["all"]
            span = max(e for _, e in spans) - min(s for s, _ in spans)
            devices.setdefault(str(key[1]), {"streams": {}})["streams"][str(key[2])] = (
                span - union(spans))
    # Per ProfilerStep#N instance (by start), the category unions over all the process's devices
    # within [start, end).
    for pid, entry in out.items():
        pid = int(pid)
        steps = sorted((start, end) for (p, _), rs in ranges.items() if p == pid
                       for start, end, name, order in rs
                       if order >= 0 and re.fullmatch(r"ProfilerStep#\d+", name))
        by_category = {}
        for (p, *rest), categories in intervals.items():
            if p == pid and len(rest) == 1:
                for category, spans in categories.items():
                    by_category.setdefault(category, []).extend(spans)
        rows = []
        for start, end in steps:
            def clipped(category):
                return [(max(a, start), min(b, end)) for a, b in by_category.get(category, [])
                        if a < end and b > start]
            compute, communication = clipped("compute"), clipped("communication")
            hidden = union(compute) + union(communication) - union(compute + communication)
            rows.append({"compute_busy_ns": union(compute),
                         "communication_busy_ns": union(communication),
                         "memory_busy_ns": union(clipped("memory")),
                         "communication_hidden_ns": hidden,
                         "communication_exposed_ns": union(communication) - hidden})
        entry["steps"] = rows
    for (device, key), rows in copies.items():
        for entry in out.values():
            if str(device) in entry["devices"]:
                entry["devices"][str(device)].setdefault("copies", {})["/".join(key)] = {
                    "copies": len(rows), "ns": sum(r[0] for r in rows),
                    "bytes": sum(r[1] for r in rows)}
    json.dump(out, sys.stdout, sort_keys=True)


def union(intervals):
    """The length of the union of [start, end) intervals."""
    total, current = 0, None
    for start, end in sorted(intervals):
        if current and start <= current[1]:
            current[1] = max(current[1], end)
            continue
        if current:
            total += current[1] - current[0]
        current = [start, end]
    return total + (current[1] - current[0] if current else 0)


if __name__ == "__main__":
    main()
