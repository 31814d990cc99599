#!/usr/bin/python3
"""Writes a Kineto trace without its user_annotation events of one name.

DDP's `## backward ##` annotation covers the main thread while autograd's threads run backward;
torch.profiler traces of other programs have none. Dropping it from a real DDP trace gives the
view gpuattr must still attribute (docs/attribution.md §Phases, backward on autograd's threads).
Stdlib only; the rest of the file is written back unchanged in content (floats kept exact).
Usage: drop_annotations.py IN.json[.gz] OUT.json NAME
"""

import decimal
import gzip
import json
import re
import sys


MARK = "@exact-number@"


class ExactEncoder(json.JSONEncoder):
    """Writes each number parsed as a Decimal with its digits, as the file had them."""

    def default(self, o):
        if isinstance(o, decimal.Decimal):
            return MARK + str(o)
        return super().default(o)


def main():
    source, target, name = sys.argv[1:4]
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt") as file:
        data = json.load(file, parse_float=decimal.Decimal)
    events = data["traceEvents"] if isinstance(data, dict) else data
    kept = [e for e in events
            if not (isinstance(e, dict) and e.get("cat") == "user_annotation" and
                    e.get("name") == name)]
    dropped = len(events) - len(kept)
    if isinstance(data, dict):
        data["traceEvents"] = kept
    else:
        data = kept
    text = re.sub('"' + MARK + r'([-+0-9.eE]+)"', r"\1", json.dumps(data, cls=ExactEncoder))
    with open(target, "w") as out:
        out.write(text)
    print("dropped %d" % dropped)


if __name__ == "__main__":
    main()
