"""Reading what scripts/gpu-check.sh wrote, for compare.py and compare_models.py: a file's JSON,
or an activities export's rows; None for what is missing or unreadable (a program that failed
leaves such files, and the checks on them are then `not run`).
"""
import json
import os


def load(outdir, name):
    """The file's JSON (a truth file's last line), or None when it is missing, empty or not JSON:
    a program that failed leaves such files, and its checks are then `not run`."""
    path = os.path.join(outdir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    if not text:
        return None
    try:
        return json.loads(text.splitlines()[-1] if name.endswith(".truth.json") else text)
    except json.JSONDecodeError:
        return None


def activities(outdir, name):
    """NAME.activities.jsonl as a list of rows, or None when missing or unreadable."""
    path = os.path.join(outdir, f"{name}.activities.jsonl")
    if not os.path.exists(path):
        return None
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                return None
    return rows
