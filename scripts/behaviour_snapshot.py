#!/usr/bin/python3
"""Byte-for-byte behaviour snapshots of the collector, for refactors that must change no output.

A simulated run is not reproducible (the simulator spends real host time), so the wire streams
are recorded once and the same bytes are replayed through each build's `gpuattr run`:

  record    runs every scenario of tests/scenarios/ under a stand-in collector that stores the
            datagrams of each connection (the shim and simgpu-run of --build), one .rec each;
  record-one  the same for one scenario file (tests/golden/ streams: scripts/update_goldens.sh);
  snapshot  replays every recording under --build's `gpuattr run` (default options with every
            export, and a variant with --no-inherit --skip-steps 2), imports every trace of
            ../shared/traces/ (and its exports, with --ranges annotations and ops), renders the
            terminal view of each report, and writes the outputs with volatile fields normalised;
  compare   lists the files of two snapshots that differ (exit 1 when any does);
  replay    (used by snapshot, under `gpuattr run`) connects to $GPUATTR_SOCKET and sends a
            recording's datagrams, connection by connection as recorded.

Normalised, and only these: capture.host, capture.started_at and capture.duration_ns (the replay's
own clock), the paths of this script and of the build's gpuattr and shim (tokens <SCRIPT>,
<BUILD>), and the interleaving of processes in the streamed exports (--activities lines and the
timeline's events are grouped by pid, order within a pid kept, and the timeline's flow and span
ids, numbered across processes, renumbered in that order): connections are serviced as they
become readable, which no build controls. The terminal view's "started ..., duration ..." is the
capture's too. Files are normalised line by line (a 1M-kernel timeline
is gigabytes), relying on the writers' layouts: one event or activity a line, reports indented.

Usage:
  scripts/behaviour_snapshot.py record --build build --out /tmp/rec
  scripts/behaviour_snapshot.py snapshot --build build --recordings /tmp/rec --out /tmp/snap-a
  scripts/behaviour_snapshot.py compare /tmp/snap-a /tmp/snap-b
"""

import argparse
import filecmp
import json
import re
import os
import selectors
import socket
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(REPO, "tests", "scenarios")
TRACES = os.path.join(os.path.dirname(REPO), "shared", "traces")
SCRIPT = os.path.abspath(__file__)
PYTHON = "/usr/bin/python3"

# Not scenarios (gate rules), or too large to record and replay in minutes: bench_10m_kernels
# and bench_1m_steps are bench_1m_kernels and bench_200k_steps at a larger count.
SKIPPED_SCENARIOS = {"gate_rules.json", "bench_10m_kernels.json", "bench_1m_steps.json"}
# The variants every recording is replayed with: (name, gpuattr run flags).
RUN_VARIANTS = [("default", []), ("noinherit_skip2", ["--no-inherit", "--skip-steps", "2"])]
IMPORT_VARIANTS = [("annotations", []), ("ops", ["--ranges", "ops"])]

# A recording: records of (connection u32, length u32, bytes); length 0xFFFFFFFF closes.
RECORD = struct.Struct("<II")
CLOSE = 0xFFFFFFFF


def record_one(build, command, env_extra, out_path):
    """Runs `command` with the shim preloaded, storing every datagram it sends."""
    shim = os.path.join(build, "inject", "libgpuattr_inject.so")
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "collector.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(path)
        listener.listen(64)
        listener.setblocking(False)
        env = dict(os.environ)
        env.update({"LD_PRELOAD": shim, "CUDA_INJECTION64_PATH": shim,
                    "NVTX_INJECTION64_PATH": shim, "GPUATTR_SOCKET": path,
                    "GPUATTR_MODE": "traced"})
        env.update(env_extra)
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, cwd=work)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, None)
        ids = {}
        with open(out_path, "wb") as out:
            idle_after_exit = 0
            while True:
                events = selector.select(timeout=0.05)
                for key, _ in events:
                    if key.data is None:
                        try:
                            connection, _ = listener.accept()
                        except BlockingIOError:
                            continue
                        ids[connection] = len(ids)
                        selector.register(connection, selectors.EVENT_READ, ids[connection])
                        continue
                    data = key.fileobj.recv(1 << 20)
                    if data:
                        out.write(RECORD.pack(key.data, len(data)) + data)
                    else:
                        out.write(RECORD.pack(key.data, CLOSE))
                        selector.unregister(key.fileobj)
                        key.fileobj.close()
                open_connections = len(selector.get_map()) - 1
                if child.poll() is not None and open_connections == 0:
                    idle_after_exit += 1
                    if idle_after_exit > 20:  # 1 s without a new connection after the exit
                        break
        listener.close()
    return child.returncode


def command_record(args):
    build = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    simgpu = os.path.join(build, "tests", "simgpu", "simgpu-run")
    for name in sorted(os.listdir(SCENARIOS)):
        if not name.endswith(".json") or name in SKIPPED_SCENARIOS:
            continue
        scenario = os.path.join(SCENARIOS, name)
        out_path = os.path.join(args.out, name[:-5] + ".rec")
        with tempfile.TemporaryDirectory() as work:
            if name == "python_workers.json":
                command = [PYTHON, os.path.join(REPO, "tests", "e2e", "python_workers",
                                                "multiprocessing_workers.py"),
                           os.path.join(build, "tests", "e2e", "libsimgpu_pywork.so"),
                           scenario, work]
                env = {"GPUATTR_CUPTI_LIBRARY":
                       os.path.join(build, "tests", "simgpu", "libcupti.so.13")}
            else:
                command = [simgpu, scenario, "--truth", os.path.join(work, "truth.json")]
                env = {}
            status = record_one(build, command, env, out_path)
        print(f"recorded {name}: exit {status}, {os.path.getsize(out_path)} bytes", flush=True)


def command_record_one(args):
    status = record_one(os.path.abspath(args.build), [
        os.path.join(os.path.abspath(args.build), "tests", "simgpu", "simgpu-run"),
        os.path.abspath(args.scenario), "--truth", os.devnull], {}, args.out)
    print(f"recorded {args.scenario}: exit {status}, {os.path.getsize(args.out)} bytes")


def command_replay(args):
    path = os.environ["GPUATTR_SOCKET"]
    connections = {}
    with open(args.recording, "rb") as recording:
        while True:
            header = recording.read(RECORD.size)
            if not header:
                break
            connection_id, length = RECORD.unpack(header)
            if length == CLOSE:
                connections.pop(connection_id).close()
                continue
            data = recording.read(length)
            if connection_id not in connections:
                connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                connection.connect(path)
                connections[connection_id] = connection
            connections[connection_id].sendall(data)
    for connection in connections.values():
        connection.close()


def replace_tokens(text, build):
    """Paths that differ between builds and checkouts: this script's, and the build's own
    gpuattr and shim (a recorded exe path stays as recorded: it is part of the input)."""
    for value, token in ((SCRIPT, "<SCRIPT>"),
                         (os.path.join(os.path.abspath(build), "collector") + "/",
                          "<BUILD>/collector/"),
                         (os.path.join(os.path.abspath(build), "inject") + "/",
                          "<BUILD>/inject/")):
        text = text.replace(value, token)
    return text


VOLATILE_CAPTURE = re.compile(r'^(    "(?:host|started_at|duration_ns)": ).*?(,?)$')


def normalise_report(source, out, build):
    """The report as written (two-space indent, sorted keys): the capture block's host, start
    and duration become placeholders, line by line."""
    in_capture = False
    for line in source:
        if line.startswith('  "capture": {'):
            in_capture = True
        elif in_capture and line.startswith("  }"):
            in_capture = False
        elif in_capture:
            line = VOLATILE_CAPTURE.sub(r"\1<volatile>\2", line.rstrip("\n")) + "\n"
        out.write(replace_tokens(line, build))


PID = re.compile(r'"pid":(\d+)')
ID = re.compile(r'"id":(\d+)')
# The terminal view's capture line: "host H, started T, duration D ms, ...".
VIEW_CAPTURE = re.compile(r'started \S+, duration [0-9.]+ ms')


def normalise_grouped(source, out, build):
    """Lines grouped by the pid they carry (stable; lines without one keep their place before
    the groups' first line and after their last): connections are serviced as they become
    readable, so processes interleave differently from run to run. One pass when one pid."""
    lines = source.readlines()
    pids = []
    for line in lines:
        match = PID.search(line)
        pids.append(match.group(1) if match else None)
    distinct = {pid for pid in pids if pid is not None}
    if len(distinct) > 1:
        first = next(i for i, pid in enumerate(pids) if pid is not None)
        last = max(i for i, pid in enumerate(pids) if pid is not None)
        body = [(pid, line.rstrip(",\n")) for pid, line in zip(pids[first:last + 1],
                                                               lines[first:last + 1])]
        body.sort(key=lambda entry: int(entry[0]) if entry[0] is not None else -1)
        # Flow and span ids are numbered across processes in write order: renumber them in the
        # grouped order, by first appearance.
        numbers = {}

        def renumber(match):
            return '"id":' + str(numbers.setdefault(match.group(1), len(numbers) + 1))

        body = [(pid, ID.sub(renumber, text)) for pid, text in body]
        separator = ",\n" if lines[first].rstrip("\n").endswith(",") else "\n"
        lines = lines[:first] + [separator.join(text for _, text in body) + "\n"] + \
            lines[last + 1:]
    for line in lines:
        out.write(replace_tokens(line, build))


def normalise_plain(source, out, build):
    for line in source:
        out.write(replace_tokens(line, build))


def write(out_dir, name, text):
    with open(os.path.join(out_dir, name), "w", encoding="utf-8") as out:
        out.write(text)


def read(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as source:
        return source.read()


def normalise_file(normalise, path, out_path, build):
    with open(path, encoding="utf-8", errors="replace") as source, \
            open(out_path, "w", encoding="utf-8") as out:
        normalise(source, out, build)


def normalise_text(text, build):
    return replace_tokens(VIEW_CAPTURE.sub("started <volatile>, duration <volatile>", text), build)


def capture_outputs(build, out_dir, label, command, work):
    """Runs one gpuattr command whose outputs lie in `work`, then stores them normalised."""
    gpuattr = os.path.join(build, "collector", "gpuattr")
    result = subprocess.run([gpuattr] + command, capture_output=True, text=True, cwd=work)
    write(out_dir, f"{label}.status", f"exit {result.returncode}\n")
    write(out_dir, f"{label}.stderr", normalise_text(result.stderr, build))
    outputs = {"report.json": normalise_report, "activities.jsonl": normalise_grouped,
               "trace.json": normalise_grouped, "folded.txt": normalise_plain,
               "speedscope.json": normalise_plain}
    for name, normalise in outputs.items():
        path = os.path.join(work, name)
        if os.path.exists(path):
            normalise_file(normalise, path, os.path.join(out_dir, f"{label}.{name}"), build)
    report = os.path.join(work, "report.json")
    if os.path.exists(report):
        for view_label, view in (("view.txt", ["report", report]),
                                 ("view_top3.txt", ["report", "--top", "3", report])):
            shown = subprocess.run([gpuattr] + view, capture_output=True, text=True, cwd=work)
            write(out_dir, f"{label}.{view_label}",
                  f"exit {shown.returncode}\n" + normalise_text(shown.stdout, build))
    return result.returncode


EXPORT_FLAGS = ["-o", "report.json", "--activities", "activities.jsonl", "--trace", "trace.json",
                "--folded", "folded.txt", "--speedscope", "speedscope.json"]


def trace_inputs():
    """(label, files): every shared trace alone, and a directory's traces together when several."""
    inputs = []
    for directory in sorted(os.listdir(TRACES)):
        folder = os.path.join(TRACES, directory)
        if not os.path.isdir(folder):
            continue
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                       if f.endswith((".json", ".json.gz", ".sqlite")))
        for path in files:
            inputs.append((f"{directory}__{os.path.basename(path).split('.')[0]}", [path]))
        if len(files) > 1:
            inputs.append((f"{directory}__all", files))
    return inputs


def command_snapshot(args):
    build = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    reports = {}
    for name in sorted(os.listdir(args.recordings)):
        if not name.endswith(".rec"):
            continue
        recording = os.path.abspath(os.path.join(args.recordings, name))
        for variant, flags in RUN_VARIANTS:
            label = f"run__{name[:-4]}__{variant}"
            with tempfile.TemporaryDirectory() as work:
                command = ["run", "--quiet"] + flags + EXPORT_FLAGS + [
                    "--", PYTHON, SCRIPT, "replay", recording]
                capture_outputs(build, args.out, label, command, work)
                if name.startswith("gate_") and os.path.exists(os.path.join(work, "report.json")):
                    reports[label] = read(os.path.join(work, "report.json"))
        print(f"replayed {name}", flush=True)
    for label, files in trace_inputs():
        for variant, flags in IMPORT_VARIANTS:
            with tempfile.TemporaryDirectory() as work:
                capture_outputs(build, args.out, f"import__{label}__{variant}",
                                ["import", "--quiet"] + flags + EXPORT_FLAGS + files, work)
            with tempfile.TemporaryDirectory() as work:
                capture_outputs(build, args.out, f"export__{label}__{variant}",
                                ["export"] + flags + ["--perfetto", "trace.json", "--folded",
                                                      "folded.txt", "--speedscope",
                                                      "speedscope.json"] + files, work)
        print(f"imported {label}", flush=True)
    compare_reports(build, args.out, reports)


def compare_reports(build, out_dir, reports):
    """diff and gate between the gate scenarios' reports (text, JSON, markdown, JUnit)."""
    gpuattr = os.path.join(build, "collector", "gpuattr")
    base = reports.get("run__gate_baseline__default")
    if base is None:
        return
    for other in ("gate_slow_forward", "gate_low_coverage", "gate_baseline"):
        current = reports.get(f"run__{other}__default")
        if current is None:
            continue
        with tempfile.TemporaryDirectory() as work:
            write(work, "base.json", base)
            write(work, "current.json", current)
            for label, command in (
                    ("diff", ["diff", "base.json", "current.json"]),
                    ("diff_json", ["diff", "--json", "base.json", "current.json"]),
                    ("gate", ["gate", "--baseline", "base.json", "--current", "current.json",
                              "--markdown", "gate.md", "--junit", "gate.xml", "--json",
                              "gate.json"]),
                    ("gate_rules", ["gate", "--baseline", "base.json", "--current",
                                    "current.json", "--rules",
                                    os.path.join(SCENARIOS, "gate_rules.json")])):
                result = subprocess.run([gpuattr] + command, capture_output=True, text=True,
                                        cwd=work)
                write(out_dir, f"{label}__{other}.txt",
                      f"exit {result.returncode}\n" + normalise_text(result.stdout, build) +
                      normalise_text(result.stderr, build))
                for extra in ("gate.md", "gate.xml", "gate.json"):
                    text = read(os.path.join(work, extra))
                    if text is not None and label == "gate":
                        write(out_dir, f"{label}__{other}.{extra}", normalise_text(text, build))


def command_compare(args):
    left = set(os.listdir(args.a))
    right = set(os.listdir(args.b))
    differing = []
    for name in sorted(left & right):
        if not filecmp.cmp(os.path.join(args.a, name), os.path.join(args.b, name),
                           shallow=False):
            differing.append(name)
    only = sorted(left ^ right)
    print(f"compared {len(left & right)} files: {len(differing)} differ, "
          f"{len(only)} in one snapshot only")
    for name in differing:
        print(f"  differs: {name}")
    for name in only:
        print(f"  only in {'A' if name in left else 'B'}: {name}")
    return 1 if differing or only else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    record = sub.add_parser("record")
    record.add_argument("--build", required=True)
    record.add_argument("--out", required=True)
    snapshot = sub.add_parser("snapshot")
    snapshot.add_argument("--build", required=True)
    snapshot.add_argument("--recordings", required=True)
    snapshot.add_argument("--out", required=True)
    compare = sub.add_parser("compare")
    compare.add_argument("a")
    compare.add_argument("b")
    record_one_parser = sub.add_parser("record-one")
    record_one_parser.add_argument("--build", required=True)
    record_one_parser.add_argument("scenario")
    record_one_parser.add_argument("out")
    replay = sub.add_parser("replay")
    replay.add_argument("recording")
    args = parser.parse_args()
    handlers = {"record": command_record, "record-one": command_record_one,
                "snapshot": command_snapshot,
                "compare": command_compare, "replay": command_replay}
    return handlers[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
