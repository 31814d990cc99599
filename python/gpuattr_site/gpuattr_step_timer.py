# The step timer of `gpuattr run --clean-steps` (docs/attribution.md §FLOPs): MFU's denominator is
# the step wall time of a run without gpuattr, so gpuattr runs the command a second time with no
# shim, no ranges and no annotator, only this. At the return of each optimizer.step (the end of a
# step, as the annotator's ProfilerStep#N ends) it appends one line to GPUATTR_STEP_TIMER:
#
#   <pid> <RANK, or -1> <time.monotonic_ns()>
#
# with one os.write on a descriptor opened O_APPEND (a line is written whole, whichever process
# of the job writes). A step is the time from one step's end to the next: the whole loop,
# data loading included. Nothing else is wrapped, printed or changed; a failure to install leaves
# the program as it would run bare.
# Runs on: the thread that imports torch (install), then whichever thread calls optimizer.step.
import functools
import os
import threading
import time


def _rank():
    try:
        return int(os.environ.get("RANK", "-1"))
    except ValueError:
        return -1


def install(torch, path):
    """Wraps the step of every optimizer class the program instantiates."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    rank = _rank()
    depth = threading.local()  # a subclass's step calling its base's ends one step, not two
    optimizer_class = torch.optim.Optimizer
    original_init = optimizer_class.__init__

    def timed(step):
        @functools.wraps(step)
        def timed_step(*args, **kwargs):
            depth.value = getattr(depth, "value", 0) + 1
            try:
                return step(*args, **kwargs)
            finally:
                depth.value -= 1
                if depth.value == 0:
                    os.write(descriptor, b"%d %d %d\n" % (os.getpid(), rank, time.monotonic_ns()))

        return timed_step

    @functools.wraps(original_init)
    def init_then_time(optimizer, *args, **kwargs):
        original_init(optimizer, *args, **kwargs)
        optimizer_type = type(optimizer)
        if "_gpuattr_timed_step" not in optimizer_type.__dict__:
            optimizer_type._gpuattr_timed_step = True
            optimizer_type.step = timed(optimizer_type.step)

    optimizer_class.__init__ = init_then_time
