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
//                   call;
//   module_calls.c  `ModuleCall` (modules.ModuleCall) and `ModuleCalls`, the enter and leave of
//                   module_calls.ModuleCalls for the usual submodule call.
// The Python versions stay as the fallback, and the unit tests run both.
//
// Built with the stable ABI of CPython 3.10 and later (Py_LIMITED_API) and without torch: one
// build serves every torch. A missing or broken build is not an error: the annotator falls back to
// its pure-Python path and names why in a mark (nvtx.load_core).
// Runs on: whichever thread the annotator's hooks run on, holding the GIL, which guards the name
// caches (dicts); NVTX calls are made holding it (they only record).
#include "core.h"

// Adds the type made from `spec` to `module` as `name`: the type (borrowed: the module holds
// it), or NULL with an exception set.
static PyObject* AddType(PyObject* module, const char* name, PyType_Spec* spec) {
  PyObject* type = PyType_FromSpec(spec);
  if (type == NULL) return NULL;
  if (PyModule_AddObject(module, name, type) != 0) {
    Py_DECREF(type);
    return NULL;
  }
  return type;
}

PyObject* gpuattr_nvtx_type;
PyObject* gpuattr_ranges_type;
PyObject* gpuattr_module_call_type;

// AddType, and the type held in `*held` for as long as the process (the core's callers check an
// object's type against it; a module loaded again replaces it): 0, or -1 with an exception set.
static int AddHeldType(PyObject* module, const char* name, PyType_Spec* spec, PyObject** held) {
  PyObject* type = AddType(module, name, spec);
  if (type == NULL) return -1;
  Py_INCREF(type);
  *held = type;
  return 0;
}

static int CoreExec(PyObject* module) {
  if (gpuattr_hot_path_init() != 0 || gpuattr_module_calls_init() != 0) return -1;
  if (AddHeldType(module, "Nvtx", &gpuattr_nvtx_spec, &gpuattr_nvtx_type) != 0 ||
      AddHeldType(module, "Ranges", &gpuattr_ranges_spec, &gpuattr_ranges_type) != 0 ||
      AddHeldType(module, "ModuleCall", &gpuattr_module_call_spec, &gpuattr_module_call_type) !=
          0) {
    return -1;
  }
  return AddType(module, "ModuleCalls", &gpuattr_module_calls_spec) == NULL ? -1 : 0;
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
