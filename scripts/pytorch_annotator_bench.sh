#!/usr/bin/env bash
# The Python annotator's cost (issue 19, docs/pytorch.md): per module call (forward pre + post
# hooks with their NVTX push and pop, recorded by the shim under `gpuattr run`), per module call
# that makes an autograd node and is backpropagated (the claim of its node, and the node's hooks
# with their context and leaf ranges), and the wall time of a small real training step, each
# with --pytorch modules against --pytorch off, side by side in one run; and per aten op and per
# training step, --flops (the FLOP counter, issue 22) against --pytorch modules; and the same
# program bare under torch.profiler(activities=[CPU], with_modules=True), the tool users compare
# gpuattr with (issue 44), against `--pytorch off`. Not a test: results go in docs/benchmarks.md
# §Python annotator.
#   scripts/pytorch_annotator_bench.sh [GPUATTR] [PYTHON]
#   defaults: build/collector/gpuattr, /usr/bin/python3 (Debian's, which has torch)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gpuattr="${1:-$repo/build/collector/gpuattr}"
python="${2:-/usr/bin/python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat >"$work/bench.py" <<'PY'
import os
import sys
import time
import torch
import torch.nn as nn

torch.set_num_threads(1)
if os.environ.get("GPUATTR_BENCH_TORCH_PROFILER") == "1":
    # Left running to the end: its events are processed only when it stops, after the timings.
    torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                           with_modules=True).__enter__()
if os.environ.get("GPUATTR_BENCH_NOOP_HOOKS") == "1":
    # What torch's own dispatch of global module hooks costs, with bodies that do nothing: the
    # floor of any annotator built on them (issue 44).
    torch.nn.modules.module.register_module_forward_pre_hook(lambda module, inputs: None)
    torch.nn.modules.module.register_module_forward_hook(lambda module, inputs, outputs: None)
# 1 + 20 module calls per call of `chain`, each doing almost nothing (nn.Identity).
chain = nn.Sequential(*[nn.Identity() for _ in range(20)])
x = torch.zeros(1)
calls = 20000
for _ in range(1000):
    chain(x)
start = time.perf_counter_ns()
for _ in range(calls):
    chain(x)
per_module_call = (time.perf_counter_ns() - start) / (calls * 21)


class Scale(nn.Module):  # one autograd node per call
    def forward(self, x):
        return x * 1.0


# Forward and backward of 1 + 20 module calls, each making one node.
graph_chain = nn.Sequential(*[Scale() for _ in range(20)])
leaf = torch.zeros(1, requires_grad=True)
for _ in range(200):
    graph_chain(leaf).backward()
start = time.perf_counter_ns()
graph_calls = 5000
for _ in range(graph_calls):
    graph_chain(leaf).backward()
per_graph_module_call = (time.perf_counter_ns() - start) / (graph_calls * 21)

model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
images, labels = torch.randn(16, 1, 16, 16), torch.randint(0, 10, (16,))
def train_step():
    optimizer.zero_grad()
    criterion(model(images), labels).backward()
    optimizer.step()
for _ in range(20):
    train_step()
steps = 200
start = time.perf_counter_ns()
for _ in range(steps):
    train_step()
per_step = (time.perf_counter_ns() - start) / steps


class Adds(nn.Module):  # 100 aten::add a call, inside one module call
    def forward(self, x):
        for _ in range(100):
            x = x + 1.0
        return x


adds, small = Adds(), torch.zeros(16)
for _ in range(100):
    adds(small)
op_calls = 2000
start = time.perf_counter_ns()
for _ in range(op_calls):
    adds(small)
per_op = (time.perf_counter_ns() - start) / (op_calls * 100)
print("%.1f %.1f %.1f %.1f" % (per_module_call, per_graph_module_call, per_step, per_op))
if os.environ.get("GPUATTR_BENCH_TORCH_PROFILER") == "1":
    sys.stdout.flush()
    os._exit(0)  # without processing the profiler's events, which the timings do not include
PY

# keep_best TABLE MODE VALUE: TABLE[MODE] becomes the smaller of itself and VALUE (best of rounds).
keep_best() {
  local -n table="$1"
  if [[ -z "${table[$2]:-}" ]] || awk "BEGIN{exit !($3 < ${table[$2]})}"; then table[$2]=$3; fi
}

# Modes: the annotator off, on (modules: its compiled core where built), on its pure-Python path
# (python: GPUATTR_PYTORCH_CORE=python, issue 44), and on with the FLOP counter (--flops: a
# dispatch mode that counts every aten op, issue 22); and, bare of the annotator, the program
# under torch.profiler and with empty global module hooks (noop_hooks: torch's own dispatch of
# the hooks the annotator is built on).
declare -A module_ns graph_ns step_ns op_ns
for round in 1 2 3; do
  for mode in off modules python flops profiler noop_hooks; do
    if [[ "$mode" == profiler ]]; then
      GPUATTR_BENCH_TORCH_PROFILER=1 taskset -c 0 "$python" "$work/bench.py" >"$work/out"
    elif [[ "$mode" == noop_hooks ]]; then
      GPUATTR_BENCH_NOOP_HOOKS=1 taskset -c 0 "$gpuattr" run -q --force-overwrite \
        --pytorch off -o "$work/r.json" -- "$python" "$work/bench.py" >"$work/out"
    else
      flags=(--pytorch "$mode")
      core=""
      [[ "$mode" == flops ]] && flags=(--pytorch modules --flops)
      [[ "$mode" == python ]] && flags=(--pytorch modules) && core=python
      GPUATTR_PYTORCH_CORE="$core" taskset -c 0 "$gpuattr" run -q --force-overwrite \
        "${flags[@]}" -o "$work/r.json" -- "$python" "$work/bench.py" >"$work/out"
    fi
    read -r m g s o <"$work/out"
    keep_best module_ns "$mode" "$m"
    keep_best graph_ns "$mode" "$g"
    keep_best step_ns "$mode" "$s"
    keep_best op_ns "$mode" "$o"
  done
done
echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'); one core (taskset -c 0); best of 3, alternating"
awk -v mo="${module_ns[off]}" -v mm="${module_ns[modules]}" -v go="${graph_ns[off]}" \
  -v gm="${graph_ns[modules]}" -v so="${step_ns[off]}" -v sm="${step_ns[modules]}" 'BEGIN{
  printf "module call (nn.Identity): off %.2f us, modules %.2f us, annotator cost %.2f us per call\n", mo/1e3, mm/1e3, (mm-mo)/1e3
  printf "module call with its node, forward + backward (x * 1.0): off %.2f us, modules %.2f us, annotator cost %.2f us per call\n", go/1e3, gm/1e3, (gm-go)/1e3
  printf "training step (conv, relu, linear, loss, SGD): off %.1f us, modules %.1f us, %.2fx\n", so/1e3, sm/1e3, sm/so }'
awk -v mo="${module_ns[off]}" -v mp="${module_ns[python]}" -v go="${graph_ns[off]}" \
  -v gp="${graph_ns[python]}" -v so="${step_ns[off]}" -v sp="${step_ns[python]}" 'BEGIN{
  printf "the pure-Python path (GPUATTR_PYTORCH_CORE=python): module call %.2f us, with its node %.2f us, training step %.2fx\n", (mp-mo)/1e3, (gp-go)/1e3, sp/so }'
awk -v mo="${module_ns[off]}" -v mn="${module_ns[noop_hooks]}" 'BEGIN{
  printf "torch'"'"'s dispatch of global module hooks with empty bodies (--pytorch off): module call %.2f us\n", (mn-mo)/1e3 }'
awk -v om="${op_ns[modules]}" -v of="${op_ns[flops]}" -v sm="${step_ns[modules]}" \
  -v sf="${step_ns[flops]}" 'BEGIN{
  printf "aten op (x + 1.0 on 16 floats): modules %.2f us, flops %.2f us, FLOP counter %.2f us per op\n", om/1e3, of/1e3, (of-om)/1e3
  printf "training step: modules %.1f us, flops %.1f us, %.2fx\n", sm/1e3, sf/1e3, sf/sm }'
awk -v mo="${module_ns[off]}" -v mp="${module_ns[profiler]}" -v go="${graph_ns[off]}" \
  -v gp="${graph_ns[profiler]}" -v so="${step_ns[off]}" -v sp="${step_ns[profiler]}" \
  -v sm="${step_ns[modules]}" 'BEGIN{
  printf "torch.profiler (CPU, with_modules, bare) against --pytorch off: module call %.2f us, with its node %.2f us, training step %.1f us, %.2fx\n", (mp-mo)/1e3, (gp-go)/1e3, sp/1e3, sp/so
  printf "added time per training step: gpuattr %.1f us, torch.profiler %.1f us, ratio %.2f\n", (sm-so)/1e3, (sp-so)/1e3, (sm-so)/(sp-so) }'
