#!/usr/bin/env python3
"""Ctrl-C on a terminal reaches the profiled command exactly once under `gpuattr run`.

Runs `gpuattr run -- <python counter>` on a pseudo-terminal, types ^C once the counter is ready,
and checks that the counter saw one SIGINT (the terminal delivers it to the whole foreground
process group; gpuattr must not forward it again) and that gpuattr still wrote its report and
exited with the command's status.

usage: terminal_interrupt.py GPUATTR REPORT_PATH     exit 0 when all holds, 1 otherwise
"""
import os
import pty
import select
import sys

COUNTER = r'''
import signal, time
count = 0
def on_interrupt(signum, frame):
    global count
    count += 1
signal.signal(signal.SIGINT, on_interrupt)
print("ready", flush=True)
deadline = time.time() + 10
while time.time() < deadline and count == 0:
    time.sleep(0.01)
time.sleep(0.5)  # room for a second, forwarded SIGINT to arrive
print("count", count, flush=True)
'''


def main():
    gpuattr, report_path = sys.argv[1], sys.argv[2]
    pid, master = pty.fork()
    if pid == 0:
        os.execv(gpuattr, [gpuattr, "run", "-q", "-o", report_path, "--",
                           sys.executable, "-c", COUNTER])
    output = b""
    typed = False
    while True:
        ready, _, _ = select.select([master], [], [], 20)
        if not ready:
            break
        try:
            data = os.read(master, 1024)
        except OSError:  # EIO: the terminal's last user is gone
            break
        if not data:
            break
        output += data
        if b"ready" in output and not typed:
            os.write(master, b"\x03")
            typed = True
    _, status = os.waitpid(pid, 0)
    exit_code = os.waitstatus_to_exitcode(status)
    print("output:", repr(output), "gpuattr exit:", exit_code)
    ok = b"count 1\r\n" in output and exit_code == 0 and os.path.exists(report_path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
