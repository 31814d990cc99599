# The annotator's NVTX binding: push/pop/mark, context ranges and marks with a payload, and a
# Capabilities object that says which of them this process has.
#
# bind() takes the compiled core's binding where it loads (_gpuattr_core, python/core: NVTX3
# called directly, every capability, no library needed), else the pure-Python one below, and
# returns the mark that names the path taken and, for the pure-Python one, why
# (GPUATTR_PYTORCH_CORE=python asks for it).
#
# The CUDA toolkit's libnvtx3interop through ctypes (GPUATTR_NVTX_LIBRARY, set by `gpuattr run`)
# has all of them. When it cannot be loaded, torch's own binding (a torch built with CUDA) has
# push/pop/mark only: no domains, hence no context ranges (no backward by module) and no marks
# with a payload (no FLOP counting). Neither: the annotator stays out (AttributeError).
#
# Context ranges are the shim's `gpuattr.context` domain (inject/nvtx, docs/pytorch.md): the shim
# keeps them on the thread's stack for the path of what is pushed above them, but records no
# range of their own.
# Runs on: whichever thread the annotator's hooks run on; each name is encoded or registered once.
import ctypes
import glob
import importlib.util
import os
import threading

CONTEXT_DOMAIN = b"gpuattr.context"
_NVTX_MESSAGE_TYPE_REGISTERED = 3
_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 = 1
DEFAULT_LIBRARY = "libnvtx3interop.so.1"
CORE_ENV = "GPUATTR_PYTORCH_CORE"  # "python": the pure-Python path even where the core is built
CORE_MODULE = "_gpuattr_core"
CORE_SOURCE = "gpuattr core (NVTX3)"
CORE_MARK = "gpuattr.pytorch: core: "
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class EventAttributes(ctypes.Structure):
    """nvtxEventAttributes_t (NVTX_VERSION 3, 48 bytes), as a registered message needs it."""

    _fields_ = [("version", ctypes.c_uint16), ("size", ctypes.c_uint16),
                ("category", ctypes.c_uint32), ("color_type", ctypes.c_int32),
                ("color", ctypes.c_uint32), ("payload_type", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("payload", ctypes.c_uint64),
                ("message_type", ctypes.c_int32), ("message", ctypes.c_void_p)]


def _registered_attributes(message=None):
    return EventAttributes(version=3, size=ctypes.sizeof(EventAttributes),
                           message_type=_NVTX_MESSAGE_TYPE_REGISTERED, message=message)


class Capabilities:
    """What a binding can do: `source` names it; `context_ranges` (push_context/pop_context:
    backward by module) and `domain_marks` (domain_mark: the FLOP counter's marks)."""

    __slots__ = ("source", "context_ranges", "domain_marks")

    def __init__(self, source, context_ranges, domain_marks):
        self.source = source
        self.context_ranges = context_ranges
        self.domain_marks = domain_marks

    def __repr__(self):
        return "Capabilities(%r, context_ranges=%r, domain_marks=%r)" % (
            self.source, self.context_ranges, self.domain_marks)


class Nvtx:
    """push(name), pop(), mark(text); push_context(name), pop_context() and
    domain_mark(domain, message, value) where `capabilities` says so (else None)."""

    def __init__(self, torch, library_path=None):
        self.push_context = None
        self.pop_context = None
        self.domain_mark = None
        if library_path is None:
            library_path = os.environ.get("GPUATTR_NVTX_LIBRARY", DEFAULT_LIBRARY)
        try:
            library = ctypes.CDLL(library_path)
        except OSError:
            library = None
        if library is None:
            binding = torch._C._nvtx  # AttributeError: no NVTX at all, the annotator stays out
            self.push = binding.rangePushA
            self.pop = binding.rangePop
            self.mark = binding.markA
            self.capabilities = Capabilities("torch._C._nvtx", False, False)
            return
        self._bind_ranges(library)
        try:
            self._bind_context(library)
            self._bind_domain_marks(library)
        except AttributeError:  # a library without NVTX domains
            self.push_context = self.pop_context = self.domain_mark = None
        self.capabilities = Capabilities(library_path, self.push_context is not None,
                                         self.domain_mark is not None)

    def _bind_ranges(self, library):
        push = library.nvtxRangePushA
        push.argtypes = [ctypes.c_char_p]
        push.restype = ctypes.c_int
        pop = library.nvtxRangePop
        pop.argtypes = []
        pop.restype = ctypes.c_int
        mark = library.nvtxMarkA
        mark.argtypes = [ctypes.c_char_p]
        mark.restype = None
        encoded = {}  # range name -> its bytes: a module's name is pushed at every call

        def push_name(name):
            name_bytes = encoded.get(name)
            if name_bytes is None:
                name_bytes = encoded[name] = name.encode("utf-8", "replace")
            return push(name_bytes)

        self.push = push_name
        self.pop = pop
        self.mark = lambda text: mark(text.encode("utf-8", "replace"))

    def _bind_context(self, library):
        create = library.nvtxDomainCreateA
        create.argtypes = [ctypes.c_char_p]
        create.restype = ctypes.c_void_p
        register = library.nvtxDomainRegisterStringA
        register.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        register.restype = ctypes.c_void_p
        push = library.nvtxDomainRangePushEx
        push.argtypes = [ctypes.c_void_p, ctypes.POINTER(EventAttributes)]
        push.restype = ctypes.c_int
        pop = library.nvtxDomainRangePop
        pop.argtypes = [ctypes.c_void_p]
        pop.restype = ctypes.c_int
        domain = create(CONTEXT_DOMAIN)
        attributes_by_name = {}  # name -> its attributes, with the name registered once

        def push_context(name):
            attributes = attributes_by_name.get(name)
            if attributes is None:
                attributes = attributes_by_name[name] = _registered_attributes(
                    register(domain, name.encode("utf-8", "replace")))
            push(domain, ctypes.byref(attributes))

        self.push_context = push_context
        self.pop_context = lambda: pop(domain)

    def _bind_domain_marks(self, library):
        """domain_mark(domain, message, value): nvtxDomainMarkEx in `domain` (bytes) with the
        registered `message` (str) and `value` as an unsigned 64-bit payload (None: none)."""
        create = library.nvtxDomainCreateA
        register = library.nvtxDomainRegisterStringA
        mark = library.nvtxDomainMarkEx
        mark.argtypes = [ctypes.c_void_p, ctypes.POINTER(EventAttributes)]
        mark.restype = None
        domains = {}  # name -> handle
        messages = {}  # (domain name, message) -> registered handle
        per_thread = threading.local()  # an attributes structure each: ctypes releases the GIL

        def domain_mark(domain_name, message, value):
            handle = messages.get((domain_name, message))
            if handle is None:
                domain = domains.get(domain_name)
                if domain is None:
                    domain = domains[domain_name] = create(domain_name)
                handle = register(domain, message.encode("utf-8", "replace"))
                messages[(domain_name, message)] = handle
            attributes = getattr(per_thread, "attributes", None)
            if attributes is None:
                attributes = per_thread.attributes = _registered_attributes()
            attributes.message = handle
            if value is None:
                attributes.payload_type = 0
            else:
                attributes.payload_type = _NVTX_PAYLOAD_TYPE_UNSIGNED_INT64
                attributes.payload = value
            mark(domains[domain_name], ctypes.byref(attributes))

        self.domain_mark = domain_mark


class CoreNvtx:
    """The compiled core's binding: its Nvtx methods, called directly, and every capability."""

    def __init__(self, core):
        native = core.Nvtx()
        self.push, self.pop, self.mark = native.push, native.pop, native.mark
        self.push_context, self.pop_context = native.push_context, native.pop_context
        self.domain_mark = native.domain_mark
        self.capabilities = Capabilities(CORE_SOURCE, True, True)


def load_core(directory=_PACKAGE_DIR):
    """(the compiled core, None) when `directory` has one that loads, else (None, why not)."""
    if os.environ.get(CORE_ENV) == "python":
        return None, CORE_ENV + "=python"
    paths = sorted(glob.glob(os.path.join(directory, CORE_MODULE + ".*so")))
    if not paths:
        return None, "not built: no %s in %s" % (CORE_MODULE, directory)
    try:
        spec = importlib.util.spec_from_file_location(__package__ + "." + CORE_MODULE, paths[0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as error:  # ImportError, OSError: a broken or foreign build
        return None, "%s: %s" % (type(error).__name__, error)
    return module, None


def bind(torch, directory=_PACKAGE_DIR):
    """(binding, core, mark): the compiled core and its binding where it loads and works, else
    the pure-Python binding (Nvtx: AttributeError without any NVTX) and None; the mark names
    the path, and why the pure-Python one."""
    core, why_not = load_core(directory)
    if core is not None:
        try:
            return CoreNvtx(core), core, CORE_MARK + "compiled"
        except Exception as error:
            why_not = "%s: %s" % (type(error).__name__, error)
    return Nvtx(torch), None, CORE_MARK + "python (" + why_not + ")"
