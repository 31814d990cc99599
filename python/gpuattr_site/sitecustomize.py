# gpuattr's sitecustomize: `gpuattr run` puts this directory first on PYTHONPATH (docs/pytorch.md).
#
# It must cost an unannotated program nothing and change nothing it can observe:
#   - the sitecustomize the environment had before (the next one on sys.path) still runs, first;
#   - torch is never imported here: a finder on sys.meta_path waits for the program's own
#     `import torch` and installs the annotator (gpuattr_pytorch) right after torch finished
#     loading, then removes itself;
#   - GPUATTR_PYTORCH=off, or any failure here, leaves the program exactly as it would run bare;
#   - nothing is printed.
# With GPUATTR_STEP_TIMER set (the clean run of `gpuattr run --clean-steps`) it installs the step
# timer (gpuattr_step_timer) instead of the annotator, and nothing else.
# Runs on: the interpreter's main thread at startup (site.py), then on whichever thread first
# imports torch.
import os
import sys


def _chain_previous_sitecustomize():
    """Runs the sitecustomize that the rest of sys.path holds, as if this one were not there."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _TorchImportWatcher:
    """A meta-path finder that only answers for `torch`: it finds torch's real spec through the
    other finders and wraps its loader, so the annotator (or, given a timer file, the step timer)
    installs once torch's module ran."""

    def __init__(self, step_timer_path):
        self._step_timer_path = step_timer_path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module
        step_timer_path = self._step_timer_path

        def exec_then_annotate(module):
            original_exec(module)
            try:
                if step_timer_path:
                    import gpuattr_step_timer

                    gpuattr_step_timer.install(module, step_timer_path)
                else:
                    import gpuattr_pytorch

                    gpuattr_pytorch.install(module)
            except Exception:  # never harms the program: the annotator is just not there
                pass

        spec.loader.exec_module = exec_then_annotate
        return spec


try:
    _chain_previous_sitecustomize()
finally:
    _step_timer_path = os.environ.get("GPUATTR_STEP_TIMER")
    if "torch" not in sys.modules and (
            _step_timer_path or os.environ.get("GPUATTR_PYTORCH", "modules") != "off"):
        sys.meta_path.insert(0, _TorchImportWatcher(_step_timer_path))
