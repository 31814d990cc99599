// The compiled core's parts (gpuattr_core.c): the types and functions each file defines, which
// the module adds. See gpuattr_core.c for the design.
#ifndef GPUATTR_PYTHON_CORE_CORE_H_
#define GPUATTR_PYTHON_CORE_CORE_H_

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>

extern PyType_Spec gpuattr_nvtx_spec;             // nvtx_binding.c: Nvtx
extern PyType_Spec gpuattr_ranges_spec;           // hot_path.c: Ranges
extern PyMethodDef gpuattr_hot_path_functions[];  // hot_path.c: grad_nodes
int gpuattr_hot_path_init(void);                  // hot_path.c: 0, or -1 with an exception set

#endif  // GPUATTR_PYTHON_CORE_CORE_H_
