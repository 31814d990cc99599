"""The demo's GPT (examples/pytorch/train.py), torch.compile'd, then what dynamo counted.

    python compiled_demo.py EXAMPLE [--steps N]

Runs the example unchanged with --compile, then prints one line of torch._dynamo's counters that
say whether anything broke or recompiled a graph: graph_break, recompiles and unimplemented. The
e2e test compares this script's whole stdout, losses included, under gpuattr run and bare.
"""
import json
import runpy
import sys


def main():
    example = sys.argv[1]
    sys.argv = [example, "--compile"] + sys.argv[2:]
    runpy.run_path(example, run_name="__main__")
    from torch._dynamo.utils import counters

    print("dynamo " + json.dumps({name: dict(counters[name])
                                  for name in ("graph_break", "recompiles", "unimplemented")},
                                 sort_keys=True))


if __name__ == "__main__":
    main()
