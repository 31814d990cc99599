#!/usr/bin/python3
"""An independent computation of the phase terms gpuattr import reports for a Kineto trace.

docs/attribution.md, written again from the text in stdlib Python over the raw JSON, without any
of the collector's code or data files: the report must agree with it to the nanosecond
(tests/component/import_test.cpp). Default options (--ranges annotations, inheritance on).

  - ranges: user_annotation X events, and cpu_op / Operator X events named ProfilerStep#N, per
    (pid, tid); sorted by (start, longer first); a range that starts inside another but ends
    after it is clipped to the enclosing range's end; a range encloses [start, end);
  - launches: runtime and driver X events with args.correlation; per (pid, correlation) the
    earliest one (file order at ties); an activity's process is that of the first call in file
    order with its correlation id, else the process with the most runtime and driver calls;
  - attribution: the launch thread's innermost open range at the launch's start, else the main
    thread's (the thread of the process's earliest range; the smaller tid at ties), else none;
  - phase: of the innermost range of the path whose whole name matches a phase pattern
    (case-insensitive; first of forward, backward, recompute, optimizer, loss, communication),
    a forward range under a backward-matching one being recompute; a kernel named like an
    NCCL/RCCL collective is communication whatever its path.

And per device of each process (docs/attribution.md §Compute, communication and memory): the busy
unions of collective kernels, other kernels, and copies and sets over all its streams (device
from args.device else pid, stream from args.stream else tid), hidden communication = |comm ∩
compute|, exposed = comm - hidden, and each stream's idle time (its first start to its last end,
less its union).

Prints {"<pid>": {"phases": {"forward_ns": N, ..., "other_ns": N, "unattributed_ns": N},
"devices": {"<device>": {"compute_ns": N, ..., "streams": {"<stream>": idle_ns}}}}} on stdout.
Usage: pytorch_phase_reference.py TRACE.json[.gz]
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
                r"##\s*forward([_.:# ].*)?##", r"CompiledFunction"],
    "backward": [r"backward", r"bwd", r"backward[_.:# ].*", r".*[_.:# ]backward",
                 r"autograd::engine::evaluate_function.*", r"##\s*backward([_.:# ].*)?##",
                 r"CompiledFunctionBackward"],
    "recompute": [r"recompute", r"recompute[_.:# ].*", r"checkpoint", r"activation_checkpoint.*"],
    "optimizer": [r"optimizer", r"optim", r"optimizer[_.:# ].*", r"optimizer\.step.*",
                  r"optimizer_step", r"Optimizer\.step#.*", r"Optimizer\.zero_grad#.*",
                  r"##\s*optimizer([_.:# ].*)?##", r"##\s*zero_grad\s*##"],
    "loss": [r"loss", r"loss[_.:# ].*", r".*[_.:# ]loss", r"criterion", r"##\s*loss([_.:# ].*)?##"],
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
        ranges.sort(key=lambda r: (r[0], -r[1], r[3]))
        self.opened = []
        stack = []
        for start, end, name, _ in ranges:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                end = stack[-1][1]
            path = (stack[-1][2] if stack else ()) + (name,)
            stack.append((start, end, path))
            self.opened.append((start, end, path))
        self.starts = [r[0] for r in self.opened]

    def path_at(self, t):
        """The innermost range enclosing t: the last pushed one with start <= t < end."""
        for i in range(bisect.bisect_right(self.starts, t) - 1, -1, -1):
            start, end, path = self.opened[i]
            if start <= t < end:
                return path
        return ()


def main():
    opener = gzip.open if sys.argv[1].endswith(".gz") else open
    with opener(sys.argv[1], "rt") as file:
        data = json.load(file, parse_float=decimal.Decimal)
    events = data["traceEvents"] if isinstance(data, dict) else data
    ranges = {}  # (pid, tid) -> [(start, end, name, index)]
    calls = {}  # (pid, correlation) -> (start, file index, tid)
    pid_of_correlation = {}
    calls_per_pid = {}
    activities = []
    for index, e in enumerate(events):
        if e.get("ph") != "X" or not isinstance(e.get("cat"), str):
            continue
        cat, name = e["cat"], e.get("name", "")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        start = ns(e["ts"])
        end = start + ns(e.get("dur", 0))
        if cat == "user_annotation" or (cat in ("cpu_op", "Operator") and
                                        name.startswith("ProfilerStep#")):
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
            kernel = cat in ("kernel", "Kernel")
            category = ("memory" if not kernel else
                        "communication" if COLLECTIVE.search(name) else "compute")
            activities.append((args.get("correlation"), start, end, category,
                               args.get("device", e.get("pid")), args.get("stream", e.get("tid"))))
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
        if call is not None:
            launch_ns, _, tid = call
            if (pid, tid) in threads:
                path = threads[(pid, tid)].path_at(launch_ns)
            if not path and pid in main_tid:
                path = threads[(pid, main_tid[pid][1])].path_at(launch_ns)
        if not path:
            terms["unattributed_ns"] += duration
            continue
        phase = "communication" if category == "communication" else phase_of_path(path)
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
