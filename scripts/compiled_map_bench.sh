#!/usr/bin/env bash
# The kernel map's compile-time cost and size (issue 42, docs/pytorch.md §Compiled models): the
# first training step of tests/e2e/pytorch/train_compiled.py's GPT-style model (forward, loss,
# backward: dynamo, AOTAutograd and Inductor compiling both graphs, with Inductor's caches off)
# timed in fresh processes with the compiled room's KernelMaps installed and without, ROUNDS
# rounds alternately; then, from the mapped runs, the map of each graph: its calls, how many were
# matched to their kernel, and the size of its line in the maps file. Not a test: results go in docs/benchmarks.md.
#   scripts/compiled_map_bench.sh [PYTHON] [ROUNDS]
#   defaults: .venv/bin/python (torch 2.13, which compiles), 5
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${1:-$repo/.venv/bin/python}"
rounds="${2:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat >"$work/bench.py" <<'PY'
import json
import sys
import time

import torch

sys.path.insert(0, sys.argv[2])
import train_compiled  # noqa: E402  (its model; nothing of the simulated GPU runs here)
from gpuattr_pytorch import compiled, compiled_graphs  # noqa: E402

maps = None
if sys.argv[1] == "mapped":
    import torch._inductor.codecache
    import torch._inductor.debug
    import torch._inductor.virtualized

    maps = compiled.KernelMaps()
    maps.install(torch._inductor.debug, torch._inductor.codecache, torch._inductor.virtualized,
                 [module for name, module in list(sys.modules.items())
                  if name.startswith("torch._inductor") and module is not None])
torch.manual_seed(0)
model = train_compiled.Gpt()
tokens = torch.randint(0, train_compiled.VOCAB, (train_compiled.BATCH, train_compiled.TOKENS))
targets = torch.randint(0, train_compiled.VOCAB, (train_compiled.BATCH, train_compiled.TOKENS))
with torch._inductor.config.patch(force_disable_caches=True):
    step = torch.compile(train_compiled.loss_of)
    start = time.perf_counter()
    step(model, tokens, targets).backward()
    seconds = time.perf_counter() - start
graphs = []
if maps is not None:
    assert maps.unavailable is None, maps.unavailable
    for key, sites in maps.maps.items():
        line = compiled_graphs.map_line(key, "torch.compile: " + key, sites,
                                        lambda name: "nn.Module: %s_0" % name)
        text = json.dumps(line, separators=(",", ":"))
        graphs.append({"calls": len(sites),
                       "matched": sum(site.modules is not None for site in sites),
                       "json_bytes": len(text)})
print(json.dumps({"seconds": seconds, "graphs": graphs}))
PY

export PYTHONPATH="$repo/python/gpuattr_site:$repo/tests/simgpu/python"
export GPUATTR_PYTORCH=off PYTHONDONTWRITEBYTECODE=1
for round in $(seq "$rounds"); do
  for mode in plain mapped; do
    "$python" -W ignore "$work/bench.py" "$mode" "$repo/tests/e2e/pytorch" 2>/dev/null |
      tail -1 >"$work/$mode.$round.json"
  done
done
"$python" - "$work" "$rounds" <<'PY'
import json
import statistics
import sys

work, rounds = sys.argv[1], int(sys.argv[2])
runs = {mode: [json.load(open("%s/%s.%d.json" % (work, mode, r))) for r in range(1, rounds + 1)]
        for mode in ("plain", "mapped")}
plain = [run["seconds"] for run in runs["plain"]]
mapped = [run["seconds"] for run in runs["mapped"]]
ratios = [m / p for m, p in zip(mapped, plain)]
print("first step, compiling (s): without the map %s, median %.2f"
      % (", ".join("%.2f" % s for s in plain), statistics.median(plain)))
print("                           with the map    %s, median %.2f"
      % (", ".join("%.2f" % s for s in mapped), statistics.median(mapped)))
print("with / without, per round: %s, median %.3f"
      % (", ".join("%.3f" % r for r in ratios), statistics.median(ratios)))
for index, graph in enumerate(runs["mapped"][0]["graphs"]):
    print("graph %d: %d calls, %d matched, a %d-byte line in the maps file"
          % (index, graph["calls"], graph["matched"], graph["json_bytes"]))
PY
