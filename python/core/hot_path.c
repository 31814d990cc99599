// The compiled core's hot path (gpuattr_core.c): `Ranges` is ranges.Ranges (push and pop_to over
// the calling thread's ThreadStack, through the binding's push and pop) and `grad_nodes` is
// backward.grad_nodes, call for call and in the same order, without their Python frames.
// Runs on: whichever thread the annotator's hooks run on, holding the GIL.
#include "core.h"

// Attribute names, interned once (gpuattr_hot_path_init): looked up at each call, as Python does.
static PyObject* g_names_attribute;          // "names"
static PyObject* g_push_attribute;           // "push"
static PyObject* g_pop_attribute;            // "pop"
static PyObject* g_requires_grad_attribute;  // "requires_grad"
static PyObject* g_grad_fn_attribute;        // "grad_fn"

int gpuattr_hot_path_init(void) {
  if (g_grad_fn_attribute != NULL) return 0;  // a module loaded again in the same process
  g_names_attribute = PyUnicode_InternFromString("names");
  g_push_attribute = PyUnicode_InternFromString("push");
  g_pop_attribute = PyUnicode_InternFromString("pop");
  g_requires_grad_attribute = PyUnicode_InternFromString("requires_grad");
  g_grad_fn_attribute = PyUnicode_InternFromString("grad_fn");
  return g_names_attribute != NULL && g_push_attribute != NULL && g_pop_attribute != NULL &&
                 g_requires_grad_attribute != NULL && g_grad_fn_attribute != NULL
             ? 0
             : -1;
}

// ---- grad_nodes: backward.grad_nodes without its frames ----

enum { kNestingLimit = 4 };  // backward._NESTING_LIMIT

static int CollectGradNodes(PyObject* value, PyObject* tensor_type, PyObject* found, int depth);

static int CollectFromSequence(PyObject* items, PyObject* tensor_type, PyObject* found, int depth) {
  PyObject* iterator = PyObject_GetIter(items);
  if (iterator == NULL) return -1;
  PyObject* item;
  while ((item = PyIter_Next(iterator)) != NULL) {
    const int failed = CollectGradNodes(item, tensor_type, found, depth + 1);
    Py_DECREF(item);
    if (failed != 0) {
      Py_DECREF(iterator);
      return -1;
    }
  }
  Py_DECREF(iterator);
  return PyErr_Occurred() != NULL ? -1 : 0;
}

// isinstance(value, tensor_type), for a tensor type whose metaclass keeps type.__instancecheck__
// (torch.Tensor's): a subtype is one; an object of an exact builtin type, whose __class__ is its
// type, is not; anything else asks isinstance (a __class__ may claim a type). 1, 0, or -1.
static int IsTensor(PyObject* value, PyObject* tensor_type) {
  if (PyObject_TypeCheck(value, (PyTypeObject*)tensor_type)) return 1;
  if (value == Py_None || PyTuple_CheckExact(value) || PyList_CheckExact(value) ||
      PyDict_CheckExact(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
      PyBool_Check(value) || PyUnicode_CheckExact(value)) {
    return 0;
  }
  return PyObject_IsInstance(value, tensor_type);
}

// Appends to `found` the grad_fn of each tensor in `value` that requires a gradient (tensors, and
// lists, tuples and dicts of them, kNestingLimit levels deep), in backward.grad_nodes' order.
static int CollectGradNodes(PyObject* value, PyObject* tensor_type, PyObject* found, int depth) {
  const int is_tensor = IsTensor(value, tensor_type);
  if (is_tensor < 0) return -1;
  if (is_tensor) {
    PyObject* requires_grad = PyObject_GetAttr(value, g_requires_grad_attribute);
    if (requires_grad == NULL) return -1;
    const int requires = PyObject_IsTrue(requires_grad);
    Py_DECREF(requires_grad);
    if (requires <= 0) return requires;
    PyObject* node = PyObject_GetAttr(value, g_grad_fn_attribute);
    if (node == NULL) return -1;
    const int failed = node != Py_None ? PyList_Append(found, node) : 0;
    Py_DECREF(node);
    return failed;
  }
  if (depth >= kNestingLimit) return 0;
  if (PyList_Check(value) || PyTuple_Check(value)) {
    return CollectFromSequence(value, tensor_type, found, depth);
  }
  if (PyDict_Check(value)) {
    PyObject* values = PyObject_CallMethod(value, "values", NULL);
    if (values == NULL) return -1;
    const int failed = CollectFromSequence(values, tensor_type, found, depth);
    Py_DECREF(values);
    return failed;
  }
  return 0;
}

int gpuattr_collect_grad_nodes(PyObject* value, PyObject* tensor_type, PyObject* found) {
  if (!PyType_Check(tensor_type)) {
    PyErr_SetString(PyExc_TypeError, "grad_nodes: tensor_type must be a type");
    return -1;
  }
  return CollectGradNodes(value, tensor_type, found, 0);
}

static PyObject* GradNodes(PyObject* module, PyObject* const* args, Py_ssize_t count) {
  (void)module;
  if (count != 2) {
    PyErr_SetString(PyExc_TypeError, "grad_nodes(value, tensor_type)");
    return NULL;
  }
  PyObject* found = PyList_New(0);
  if (found == NULL) return NULL;
  if (gpuattr_collect_grad_nodes(args[0], args[1], found) != 0) {
    Py_DECREF(found);
    return NULL;
  }
  return found;
}

// ---- Ranges: ranges.Ranges without its frames ----

typedef struct {
  PyObject ob_base;  // PyObject_HEAD
  PyObject* nvtx;    // the binding: its push and pop are looked up at each call, as ranges.py does
  PyObject* stack;   // the ThreadStack (a threading.local): `names` is the calling thread's
} RangesObject;

static int RangesInit(PyObject* self_object, PyObject* args, PyObject* kwargs) {
  RangesObject* self = (RangesObject*)self_object;
  PyObject* nvtx;
  PyObject* stack;
  if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "Ranges(nvtx, stack) takes positional arguments");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OO:Ranges", &nvtx, &stack)) return -1;
  PyObject* old_nvtx = self->nvtx;
  PyObject* old_stack = self->stack;
  Py_INCREF(nvtx);
  Py_INCREF(stack);
  self->nvtx = nvtx;
  self->stack = stack;
  Py_XDECREF(old_nvtx);
  Py_XDECREF(old_stack);
  return 0;
}

static void RangesDealloc(PyObject* self_object) {
  RangesObject* self = (RangesObject*)self_object;
  Py_XDECREF(self->nvtx);
  Py_XDECREF(self->stack);
  PyTypeObject* type = Py_TYPE(self_object);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_object(self_object);
  Py_DECREF(type);
}

// nvtx.<method>(argument), or nvtx.<method>() where `argument` is NULL, its result dropped:
// 0, or -1 with an exception set. The core's own Nvtx is called directly.
static int CallNvtx(RangesObject* self, PyObject* method, PyObject* argument) {
  if (Py_TYPE(self->nvtx) == (PyTypeObject*)gpuattr_nvtx_type) {
    if (argument != NULL) return gpuattr_nvtx_push(self->nvtx, argument);
    gpuattr_nvtx_pop();
    return 0;
  }
  PyObject* bound = PyObject_GetAttr(self->nvtx, method);
  if (bound == NULL) return -1;
  PyObject* result = argument == NULL ? PyObject_CallNoArgs(bound)
                                      : PyObject_CallFunctionObjArgs(bound, argument, NULL);
  Py_DECREF(bound);
  if (result == NULL) return -1;
  Py_DECREF(result);
  return 0;
}

// The calling thread's ThreadStack.names (a new reference), or NULL with an exception set.
static PyObject* ThreadNames(RangesObject* self) {
  PyObject* names = PyObject_GetAttr(self->stack, g_names_attribute);
  if (names != NULL && !PyList_Check(names)) {
    Py_DECREF(names);
    PyErr_SetString(PyExc_TypeError, "ThreadStack.names must be a list");
    return NULL;
  }
  return names;
}

// push(name): onto the thread's names, then nvtx.push(name).
static PyObject* RangesPush(PyObject* self_object, PyObject* name) {
  RangesObject* self = (RangesObject*)self_object;
  PyObject* names = ThreadNames(self);
  if (names == NULL) return NULL;
  const int appended = PyList_Append(names, name);
  Py_DECREF(names);
  if (appended != 0 || CallNvtx(self, g_push_attribute, name) != 0) return NULL;
  Py_RETURN_NONE;
}

// Whether the last of `names` equals `name` (1, 0, or -1 with an exception set), removing it
// first when `remove`.
static int LastIs(PyObject* names, PyObject* name, int remove) {
  const Py_ssize_t size = PyList_Size(names);
  if (size <= 0) return 0;
  PyObject* last = PyList_GetItem(names, size - 1);  // borrowed
  if (last == NULL) return -1;
  Py_INCREF(last);
  if (remove && PyList_SetSlice(names, size - 1, size, NULL) != 0) {
    Py_DECREF(last);
    return -1;
  }
  const int equal = PyObject_RichCompareBool(last, name, Py_EQ);
  Py_DECREF(last);
  return equal;
}

// Pops `names` through its innermost `name`, as ranges.Ranges.pop_to: 0, or -1 with an exception.
static int PopThrough(RangesObject* self, PyObject* names, PyObject* name) {
  const int innermost = LastIs(names, name, /*remove=*/0);
  if (innermost < 0) return -1;
  if (innermost) {  // the usual case: calls nest
    if (PyList_SetSlice(names, PyList_Size(names) - 1, PyList_Size(names), NULL) != 0) return -1;
    return CallNvtx(self, g_pop_attribute, NULL);
  }
  const int open = PySequence_Contains(names, name);
  if (open <= 0) return open;  // a name that is not open pops nothing
  while (PyList_Size(names) > 0) {
    if (CallNvtx(self, g_pop_attribute, NULL) != 0) return -1;
    const int found = LastIs(names, name, /*remove=*/1);
    if (found != 0) return found < 0 ? -1 : 0;
  }
  return 0;
}

int gpuattr_ranges_push(PyObject* ranges, PyObject* names, PyObject* name) {
  if (PyList_Append(names, name) != 0) return -1;
  return CallNvtx((RangesObject*)ranges, g_push_attribute, name);
}

int gpuattr_ranges_pop_to(PyObject* ranges, PyObject* names, PyObject* name) {
  return PopThrough((RangesObject*)ranges, names, name);
}

// pop_to(name): pops through the innermost `name` (ranges an exception left open above it too).
static PyObject* RangesPopTo(PyObject* self_object, PyObject* name) {
  RangesObject* self = (RangesObject*)self_object;
  PyObject* names = ThreadNames(self);
  if (names == NULL) return NULL;
  const int failed = PopThrough(self, names, name);
  Py_DECREF(names);
  if (failed != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* RangesGetNvtx(PyObject* self_object, void* closure) {
  (void)closure;
  PyObject* nvtx = ((RangesObject*)self_object)->nvtx;
  Py_INCREF(nvtx);
  return nvtx;
}

static PyObject* RangesGetStack(PyObject* self_object, void* closure) {
  (void)closure;
  PyObject* stack = ((RangesObject*)self_object)->stack;
  Py_INCREF(stack);
  return stack;
}

static PyMethodDef kRangesMethods[] = {
    {"push", RangesPush, METH_O, "push(name): onto the thread's names, then nvtx.push."},
    {"pop_to", RangesPopTo, METH_O, "pop_to(name): pops through the innermost `name`."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef kRangesGetSet[] = {
    {"nvtx", RangesGetNvtx, NULL, "the NVTX binding", NULL},
    {"stack", RangesGetStack, NULL, "the ThreadStack", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot kRangesSlots[] = {
    {Py_tp_doc, "ranges.Ranges in C: push and pop_to over the calling thread's ThreadStack."},
    {Py_tp_init, RangesInit},
    {Py_tp_dealloc, RangesDealloc},
    {Py_tp_methods, kRangesMethods},
    {Py_tp_getset, kRangesGetSet},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

PyType_Spec gpuattr_ranges_spec = {
    .name = "gpuattr_pytorch._gpuattr_core.Ranges",
    .basicsize = sizeof(RangesObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = kRangesSlots,
};

PyMethodDef gpuattr_hot_path_functions[] = {
    {"grad_nodes", (PyCFunction)(void (*)(void))GradNodes, METH_FASTCALL,
     "grad_nodes(value, tensor_type): backward.grad_nodes."},
    {NULL, NULL, 0, NULL},
};
