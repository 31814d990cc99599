// The compiled core's parts (gpuattr_core.c): the types and functions each file defines, which
// the module adds. See gpuattr_core.c for the design.
#ifndef GPUATTR_PYTHON_CORE_CORE_H_
#define GPUATTR_PYTHON_CORE_CORE_H_

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>

extern PyType_Spec gpuattr_nvtx_spec;  // nvtx_binding.c: Nvtx
// nvtx_binding.c: an Nvtx's push(name) (0, or -1 with an exception set) and pop(), for the core's
// own callers, without a method call.
int gpuattr_nvtx_push(PyObject* nvtx, PyObject* name);
void gpuattr_nvtx_pop(void);
extern PyType_Spec gpuattr_ranges_spec;  // hot_path.c: Ranges
// hot_path.c: a Ranges' push(name) and pop_to(name) over the calling thread's `names` (its
// ThreadStack.names, which the caller has), for the core's own callers: 0, or -1 with an
// exception set.
int gpuattr_ranges_push(PyObject* ranges, PyObject* names, PyObject* name);
int gpuattr_ranges_pop_to(PyObject* ranges, PyObject* names, PyObject* name);
// The types the module made (gpuattr_core.c), held for the process: callers check an object's.
extern PyObject* gpuattr_nvtx_type;
extern PyObject* gpuattr_ranges_type;
extern PyMethodDef gpuattr_hot_path_functions[];  // hot_path.c: grad_nodes
int gpuattr_hot_path_init(void);                  // hot_path.c: 0, or -1 with an exception set
// hot_path.c: appends the grad_fn of each tensor in `value` that requires a gradient to the list
// `found`, as backward.grad_nodes: 0, or -1 with an exception set.
int gpuattr_collect_grad_nodes(PyObject* value, PyObject* tensor_type, PyObject* found);
extern PyType_Spec gpuattr_module_call_spec;   // module_calls.c: ModuleCall
extern PyType_Spec gpuattr_module_calls_spec;  // module_calls.c: ModuleCalls
extern PyObject* gpuattr_module_call_type;     // ModuleCalls makes its calls of it
int gpuattr_module_calls_init(void);           // module_calls.c: 0, or -1 with an exception set

#endif  // GPUATTR_PYTHON_CORE_CORE_H_
