"""Python multiprocessing under `gpuattr run` (tests/e2e/multiprocess_e2e_test.cpp).

Usage: python3 multiprocessing_workers.py LIBRARY SCENARIO TRUTH_DIR

LIBRARY is libsimgpu_pywork.so: simgpu_run_scenario_process(scenario, index, truth_part) runs one
process of SCENARIO (tests/scenarios/python_workers.json) in the calling process on the simulated
GPU and writes its truth part. Scenario processes 0 and 1 run in children started with 'fork',
2 and 3 in children started with 'spawn' (each pair concurrently), and process 4 in this parent
once every child has ended: the parent does no traced work before it forks, since a forked child
cannot use CUDA once its parent initialised it.

Writes TRUTH_DIR/p<i>.json per scenario process and TRUTH_DIR/pids.json,
{"parent": PID, "fork": [PID, PID], "spawn": [PID, PID]}. Exits 0, or 1 with a message on
stderr (a missing multiprocessing module or start method, a child that failed).
"""
import ctypes
import json
import os
import sys

try:
    import multiprocessing
except ImportError as error:  # an interpreter built without it must fail, not skip
    sys.exit(f"multiprocessing_workers: python3 has no multiprocessing module: {error}")

CHILDREN = (("fork", (0, 1)), ("spawn", (2, 3)))
PARENT_INDEX = 4
JOIN_TIMEOUT_S = 60


def run_scenario_process(library, scenario, index, truth_dir):
    run = ctypes.CDLL(library).simgpu_run_scenario_process
    run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    run.restype = ctypes.c_int
    part = os.path.join(truth_dir, f"p{index}.json")
    return run(scenario.encode(), index, part.encode())


def child(library, scenario, index, truth_dir):
    status = run_scenario_process(library, scenario, index, truth_dir)
    if status != 0:
        sys.exit(status)


def main():
    if len(sys.argv) != 4:
        print("usage: multiprocessing_workers.py LIBRARY SCENARIO TRUTH_DIR", file=sys.stderr)
        return 1
    library, scenario, truth_dir = sys.argv[1:]
    pids = {"parent": os.getpid()}
    for method, indices in CHILDREN:
        try:
            context = multiprocessing.get_context(method)
        except ValueError as error:
            print(f"multiprocessing_workers: start method {method!r} is unavailable: {error}",
                  file=sys.stderr)
            return 1
        workers = [context.Process(target=child, args=(library, scenario, index, truth_dir))
                   for index in indices]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(JOIN_TIMEOUT_S)
            if worker.exitcode != 0:
                print(f"multiprocessing_workers: {method} child {worker.pid} ended with "
                      f"{worker.exitcode}", file=sys.stderr)
                return 1
        pids[method] = [worker.pid for worker in workers]
    status = run_scenario_process(library, scenario, PARENT_INDEX, truth_dir)
    with open(os.path.join(truth_dir, "pids.json"), "w", encoding="utf-8") as out:
        json.dump(pids, out)
    return status


if __name__ == "__main__":
    sys.exit(main())
