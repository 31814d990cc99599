// _gpuattr_core: the Python annotator's compiled hot path (docs/pytorch.md §NVTX emission).
//
// The annotator's hooks run at every module call, autograd node and aten op; in Python each costs
// frames, and through ctypes each NVTX call a foreign-function call. The core does the same work
// in C, one file per part:
//   nvtx_binding.c  `Nvtx`: the methods of nvtx.py's binding (push, pop, mark, push_context,
//                   pop_context, domain_mark), each a direct call into NVTX3, header-only: its own
//                   loader finds the tool NVTX_INJECTION64_PATH names (the shim, which fills each
//                   module's table: inject/nvtx), so no NVTX library is needed;
//   hot_path.c      `Ranges` (ranges.Ranges) and `grad_nodes` (backward.grad_nodes), call for
//                   call; the Python versions stay as the fallback, and the unit tests run both.
//
// Built with the stable ABI of CPython 3.10 and later (Py_LIMITED_API) and without torch: one
// build serves every torch. A missing or broken build is not an error: the annotator falls back to
// its pure-Python path and names why in a mark (nvtx.load_core).
// Runs on: whichever thread the annotator's hooks run on, holding the GIL, which guards the name
// caches (dicts); NVTX calls are made holding it (they only record).
#include "core.h"

// Adds the type made from `spec` to `module` as `name`: 0, or -1 with an exception set.
static int AddType(PyObject* module, const char* name, PyType_Spec* spec) {
  PyObject* type = PyType_FromSpec(spec);
  if (type == NULL) return -1;
  const int failed = PyModule_AddObject(module, name, type);
  if (failed != 0) Py_DECREF(type);
  return failed;
}

static int CoreExec(PyObject* module) {
  if (gpuattr_hot_path_init() != 0) return -1;
  if (AddType(module, "Nvtx", &gpuattr_nvtx_spec) != 0) return -1;
  return AddType(module, "Ranges", &gpuattr_ranges_spec);
}

static PyModuleDef_Slot kCoreSlots[] = {
    {Py_mod_exec, CoreExec},
    {0, NULL},
};

static struct PyModuleDef kCoreModule = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_gpuattr_core",
    .m_doc = "The Python annotator's compiled hot path (docs/pytorch.md).",
    .m_size = 0,
    .m_methods = gpuattr_hot_path_functions,
    .m_slots = kCoreSlots,
};

PyMODINIT_FUNC PyInit__gpuattr_core(void) { return PyModuleDef_Init(&kCoreModule); }
