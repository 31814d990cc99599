"""The figures of Google Benchmark runs repeated in rounds (scripts/bench.sh and its siblings)."""
import glob
import json
import statistics


def medians(out, config):
    """benchmark -> (median over rounds of each round's in-process median CPU time in ns, the
    rounds' values), from the --benchmark_out files OUT/CONFIG.<round>.json."""
    rounds = {}
    for path in sorted(glob.glob(f"{out}/{config}.*.json")):
        for r in json.load(open(path))["benchmarks"]:
            if r.get("aggregate_name") == "median":
                rounds.setdefault(r["run_name"], []).append(r["cpu_time"])
    return {name: (statistics.median(v), v) for name, v in rounds.items()}
