# kernel_map_cache: gpuattr's own cache of kernel maps, by the code-cache key of the wrapper they
# map (docs/pytorch.md §Compiled models).
#
# Inductor caches what it compiled (its FX graph cache, on by default): a second run of a program
# loads each wrapper from there, and writes no kernel, so the provenance hook (compiled.py) sees
# nothing to map. The map built when gpuattr first saw the graph compile is kept here, outside
# the program's files and its compile cache, and found again by the wrapper's key, which names
# the wrapper's source. A graph Inductor compiled before gpuattr ever saw it has no map here.
#
# The directory: $GPUATTR_KERNEL_MAP_CACHE, else $XDG_CACHE_HOME/gpuattr/kernel-maps, else
# ~/.cache/gpuattr/kernel-maps. Files are written whole (a temporary file, then a rename), so a
# concurrent reader sees an old map or the new one; one that cannot be read is no map.
# Runs on: the compiling thread.
import json
import os
import tempfile

from . import compiled

CACHE_ENV = "GPUATTR_KERNEL_MAP_CACHE"
CACHE_FORMAT = "gpuattr.kernel_map_cache/1"


def default_directory(environ=os.environ):
    if environ.get(CACHE_ENV):
        return environ[CACHE_ENV]
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gpuattr", "kernel-maps")


class KernelMapCache:
    """Saved CallSites, and whether their graph is a backward one, by wrapper key."""

    def __init__(self, directory):
        self._directory = directory

    def _path(self, key):
        return os.path.join(self._directory, key + ".json")

    def save(self, key, sites, is_backward):
        os.makedirs(self._directory, mode=0o700, exist_ok=True)
        entry = {"format": CACHE_FORMAT, "backward": bool(is_backward), "calls": [
            {"kernel": site.callee, "generated": site.generated, "modules": site.modules,
             "chain": site.chain, "phase": site.phase}
            for site in sites]}
        handle, temporary = tempfile.mkstemp(dir=self._directory, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entry, out, separators=(",", ":"))
            os.replace(temporary, self._path(key))
        except BaseException:
            os.unlink(temporary)
            raise

    def load(self, key):
        """(sites, is_backward) saved for `key`, or None."""
        try:
            with open(self._path(key), encoding="utf-8") as saved:
                entry = json.load(saved)
            if entry.get("format") != CACHE_FORMAT:
                return None
            sites = []
            for call in entry["calls"]:
                site = compiled.CallSite(call["kernel"], bool(call["generated"]), [])
                site.modules = call["modules"]
                site.chain = [tuple(link) for link in call["chain"]] if call["chain"] else None
                site.phase = call["phase"]
                sites.append(site)
            return sites, bool(entry["backward"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
