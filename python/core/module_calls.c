// Module calls in C (gpuattr_core.c): `ModuleCall` is modules.ModuleCall, and `ModuleCalls` does
// module_calls.ModuleCalls' enter and leave for the usual call: a submodule call whose name the
// names' cache already holds (under the innermost open root call), which is not a root's. Every
// other call goes to the Python methods of the owner (the module_calls.ModuleCalls that made it):
// a root call (it may open or close a step), a module's first call under its root (its name is
// made there), one with no root call open. Both share the owner's state: its qualified-name cache,
// its call numbers (itertools.count), its claims, the thread's stack, so that a call entered here
// and one entered there nest and number alike.
// Runs on: any thread that calls modules, holding the GIL.
#include "core.h"
#include "structmember.h"

static PyObject* g_roots_attribute;    // "roots"
static PyObject* g_modules_attribute;  // "modules"
static PyObject* g_path_attribute;     // "path"
static PyObject* g_stack_attribute;    // "stack"
static PyObject* g_dict_attribute;     // "__dict__": a threading.local's, the calling thread's
static PyObject* g_names_attribute;    // "names"
static PyObject* g_enabled_attribute;  // "enabled"
static PyObject* g_claim_method;       // "claim"
static PyObject* g_enter_method;       // "enter"
static PyObject* g_leave_method;       // "leave"

int gpuattr_module_calls_init(void) {
  if (g_leave_method != NULL) return 0;  // a module loaded again in the same process
  PyObject** names[] = {&g_roots_attribute,   &g_modules_attribute, &g_path_attribute,
                        &g_stack_attribute,   &g_dict_attribute,    &g_names_attribute,
                        &g_enabled_attribute, &g_claim_method,      &g_enter_method,
                        &g_leave_method};
  const char* texts[] = {"roots", "modules", "path",  "stack", "__dict__",
                         "names", "enabled", "claim", "enter", "leave"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    *names[i] = PyUnicode_InternFromString(texts[i]);
    if (*names[i] == NULL) return -1;
  }
  return 0;
}

// ---- ModuleCall: modules.ModuleCall ----

typedef struct {
  PyObject ob_base;    // PyObject_HEAD
  PyObject* name;      // its range name
  PyObject* is_root;   // a bool
  PyObject* number;    // calls are numbered in the order they start
  PyObject* boundary;  // the nodes of its inputs (a tuple), or None: no claim
  PyObject* path;      // its module path (a tuple of range names)
  PyObject* is_loss;   // a bool
} ModuleCallObject;

// A new ModuleCall of `type` holding new references to the six fields, or NULL with an exception.
static PyObject* MakeModuleCall(PyTypeObject* type, PyObject* const fields[6]) {
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  ModuleCallObject* call = (ModuleCallObject*)alloc(type, 0);
  if (call == NULL) return NULL;
  PyObject** slots[] = {&call->name,     &call->is_root, &call->number,
                        &call->boundary, &call->path,    &call->is_loss};
  for (int i = 0; i < 6; ++i) {
    Py_INCREF(fields[i]);
    *slots[i] = fields[i];
  }
  return (PyObject*)call;
}

static PyObject* ModuleCallNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* fields[6];
  if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "ModuleCall takes positional arguments");
    return NULL;
  }
  if (!PyArg_ParseTuple(args, "OOOOOO:ModuleCall", &fields[0], &fields[1], &fields[2], &fields[3],
                        &fields[4], &fields[5])) {
    return NULL;
  }
  return MakeModuleCall(type, fields);
}

static void ModuleCallDealloc(PyObject* self_object) {
  ModuleCallObject* self = (ModuleCallObject*)self_object;
  Py_XDECREF(self->name);
  Py_XDECREF(self->is_root);
  Py_XDECREF(self->number);
  Py_XDECREF(self->boundary);
  Py_XDECREF(self->path);
  Py_XDECREF(self->is_loss);
  PyTypeObject* type = Py_TYPE(self_object);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_object(self_object);
  Py_DECREF(type);
}

static PyMemberDef kModuleCallMembers[] = {
    {"name", T_OBJECT_EX, offsetof(ModuleCallObject, name), READONLY, NULL},
    {"is_root", T_OBJECT_EX, offsetof(ModuleCallObject, is_root), READONLY, NULL},
    {"number", T_OBJECT_EX, offsetof(ModuleCallObject, number), READONLY, NULL},
    {"boundary", T_OBJECT_EX, offsetof(ModuleCallObject, boundary), READONLY, NULL},
    {"path", T_OBJECT_EX, offsetof(ModuleCallObject, path), READONLY, NULL},
    {"is_loss", T_OBJECT_EX, offsetof(ModuleCallObject, is_loss), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kModuleCallSlots[] = {
    {Py_tp_doc,
     "modules.ModuleCall in C: ModuleCall(name, is_root, number, boundary, path, "
     "is_loss)."},
    {Py_tp_new, ModuleCallNew},
    {Py_tp_dealloc, ModuleCallDealloc},
    {Py_tp_members, kModuleCallMembers},
    {0, NULL},
};

PyType_Spec gpuattr_module_call_spec = {
    .name = "gpuattr_pytorch._gpuattr_core.ModuleCall",
    .basicsize = sizeof(ModuleCallObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = kModuleCallSlots,
};

// ---- ModuleCalls: module_calls.ModuleCalls' enter and leave, for the usual call ----

typedef struct {
  PyObject ob_base;           // PyObject_HEAD
  PyObject* owner;            // module_calls.ModuleCalls: its enter and leave take the rest
  PyObject* ranges;           // the annotator's Ranges (the core's): push and pop_to
  PyObject* stack;            // ranges.stack (a threading.local): the calling thread's
  PyObject* qualified_names;  // ModuleNames.qualified_names: id(root) -> {id(module): name}
  PyObject* claims;           // backward.Claims: enabled, claim
  PyObject* grad_enabled;     // torch.is_grad_enabled
  PyObject* tensor_type;      // torch.Tensor
  PyObject* loss_type;        // torch.nn.modules.loss._Loss
  PyObject* call_numbers;     // the owner's itertools.count
} ModuleCallsObject;

enum { kModuleCallsFields = 9 };

// The addresses of self's object fields, in ModuleCallsObject's order.
static void FieldsOf(ModuleCallsObject* self, PyObject** fields[kModuleCallsFields]) {
  PyObject** all[kModuleCallsFields] = {
      &self->owner,           &self->ranges,    &self->stack,
      &self->qualified_names, &self->claims,    &self->grad_enabled,
      &self->tensor_type,     &self->loss_type, &self->call_numbers};
  for (int i = 0; i < kModuleCallsFields; ++i) fields[i] = all[i];
}

static int ModuleCallsInit(PyObject* self_object, PyObject* args, PyObject* kwargs) {
  ModuleCallsObject* self = (ModuleCallsObject*)self_object;
  PyObject* given[kModuleCallsFields];
  if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "ModuleCalls takes positional arguments");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OOO!OOOOO:ModuleCalls", &given[0], &given[1], &PyDict_Type,
                        &given[3], &given[4], &given[5], &given[6], &given[7], &given[8])) {
    return -1;
  }
  if (Py_TYPE(given[1]) != (PyTypeObject*)gpuattr_ranges_type) {
    PyErr_SetString(PyExc_TypeError, "ModuleCalls takes the core's Ranges");
    return -1;
  }
  given[2] = PyObject_GetAttr(given[1], g_stack_attribute);  // ranges.stack
  if (given[2] == NULL) return -1;
  PyObject** fields[kModuleCallsFields];
  FieldsOf(self, fields);
  for (int i = 0; i < kModuleCallsFields; ++i) {
    PyObject* old = *fields[i];
    if (i != 2) Py_INCREF(given[i]);  // the stack is a new reference already
    *fields[i] = given[i];
    Py_XDECREF(old);
  }
  return 0;
}

static int ModuleCallsTraverse(PyObject* self_object, visitproc visit, void* arg) {
  PyObject** fields[kModuleCallsFields];
  FieldsOf((ModuleCallsObject*)self_object, fields);
  for (int i = 0; i < kModuleCallsFields; ++i) Py_VISIT(*fields[i]);
  Py_VISIT(Py_TYPE(self_object));
  return 0;
}

static int ModuleCallsClear(PyObject* self_object) {
  PyObject** fields[kModuleCallsFields];
  FieldsOf((ModuleCallsObject*)self_object, fields);
  for (int i = 0; i < kModuleCallsFields; ++i) Py_CLEAR(*fields[i]);
  return 0;
}

static void ModuleCallsDealloc(PyObject* self_object) {
  PyObject_GC_UnTrack(self_object);
  ModuleCallsClear(self_object);
  PyTypeObject* type = Py_TYPE(self_object);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_object(self_object);
  Py_DECREF(type);
}

// The calling thread's ThreadStack attributes (its threading.local dict: a new reference), or
// NULL with an exception set.
static PyObject* ThreadState(ModuleCallsObject* self) {
  PyObject* state = PyObject_GetAttr(self->stack, g_dict_attribute);
  if (state != NULL && !PyDict_Check(state)) {
    Py_DECREF(state);
    PyErr_SetString(PyExc_TypeError, "a ThreadStack's __dict__ must be a dict");
    return NULL;
  }
  return state;
}

// The list `state`[key] (borrowed), or NULL with an exception set.
static PyObject* ThreadList(PyObject* state, PyObject* key) {
  PyObject* list = PyDict_GetItemWithError(state, key);
  if (list == NULL || !PyList_Check(list)) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "ThreadStack.%U must be a list", key);
    return NULL;
  }
  return list;
}

// The range name the names' cache holds for `module` under the thread's innermost open root call
// (a new reference); NULL without an exception where there is none (the owner then names it),
// NULL with one on an error.
static PyObject* KnownSubmoduleName(ModuleCallsObject* self, PyObject* state, PyObject* module) {
  PyObject* roots = ThreadList(state, g_roots_attribute);
  if (roots == NULL) return NULL;
  const Py_ssize_t open_roots = PyList_Size(roots);
  if (open_roots <= 0) return NULL;
  PyObject* root_key = PyLong_FromVoidPtr(PyList_GetItem(roots, open_roots - 1));  // id(root)
  if (root_key == NULL) return NULL;
  PyObject* names = PyDict_GetItemWithError(self->qualified_names, root_key);  // borrowed
  Py_DECREF(root_key);
  if (names == NULL || !PyDict_Check(names)) return NULL;
  PyObject* module_key = PyLong_FromVoidPtr(module);  // id(module)
  if (module_key == NULL) return NULL;
  PyObject* name = PyDict_GetItemWithError(names, module_key);  // borrowed
  Py_DECREF(module_key);
  Py_XINCREF(name);
  return name;
}

// The path of the innermost open call in `modules` plus `name` (a new tuple), or NULL.
static PyObject* PathWith(PyObject* modules, PyObject* name) {
  const Py_ssize_t open_calls = PyList_Size(modules);
  PyObject* parent_path = NULL;
  if (open_calls > 0) {
    parent_path = PyObject_GetAttr(PyList_GetItem(modules, open_calls - 1), g_path_attribute);
    if (parent_path == NULL) return NULL;
    if (!PyTuple_Check(parent_path)) {
      Py_DECREF(parent_path);
      PyErr_SetString(PyExc_TypeError, "ModuleCall.path must be a tuple");
      return NULL;
    }
  }
  const Py_ssize_t depth = parent_path != NULL ? PyTuple_Size(parent_path) : 0;
  PyObject* path = PyTuple_New(depth + 1);
  for (Py_ssize_t i = 0; path != NULL && i < depth; ++i) {
    PyObject* item = PyTuple_GetItem(parent_path, i);
    Py_INCREF(item);
    PyTuple_SetItem(path, i, item);
  }
  Py_XDECREF(parent_path);
  if (path != NULL) {
    Py_INCREF(name);
    PyTuple_SetItem(path, depth, name);
  }
  return path;
}

// The truth of `object`.<attribute>: 1, 0, or -1 with an exception set.
static int AttributeIsTrue(PyObject* object, PyObject* attribute) {
  PyObject* value = PyObject_GetAttr(object, attribute);
  if (value == NULL) return -1;
  const int truth = PyObject_IsTrue(value);
  Py_DECREF(value);
  return truth;
}

// tuple(grad_nodes(value)): a new tuple, or NULL with an exception set.
static PyObject* GradNodeTuple(ModuleCallsObject* self, PyObject* value) {
  PyObject* found = PyList_New(0);
  if (found == NULL) return NULL;
  PyObject* nodes = gpuattr_collect_grad_nodes(value, self->tensor_type, found) == 0
                        ? PyList_AsTuple(found)
                        : NULL;
  Py_DECREF(found);
  return nodes;
}

// Where a claim of this call stops: the nodes of its arguments, where claims are enabled and
// grad mode is on; else None (a new reference), or NULL with an exception set.
static PyObject* Boundary(ModuleCallsObject* self, PyObject* args) {
  int claims = AttributeIsTrue(self->claims, g_enabled_attribute);
  if (claims > 0) {
    PyObject* grad_enabled = PyObject_CallNoArgs(self->grad_enabled);
    if (grad_enabled == NULL) return NULL;
    claims = PyObject_IsTrue(grad_enabled);
    Py_DECREF(grad_enabled);
  }
  if (claims < 0) return NULL;
  if (!claims) Py_RETURN_NONE;
  return GradNodeTuple(self, args);
}

// Enters a submodule call named `name`, as the owner's enter does: its range, then its ModuleCall
// on the thread's stack (a new reference, returned), or NULL with an exception set.
static PyObject* EnterSubmodule(ModuleCallsObject* self, PyObject* state, PyObject* module,
                                PyObject* args, PyObject* name) {
  PyObject* names = ThreadList(state, g_names_attribute);
  if (names == NULL || gpuattr_ranges_push(self->ranges, names, name) != 0) return NULL;
  PyObject* modules = ThreadList(state, g_modules_attribute);
  if (modules == NULL) return NULL;
  Py_INCREF(modules);  // held across the Python it may call (a tensor subclass's properties)
  PyObject* call = NULL;
  PyObject* path = PathWith(modules, name);
  PyObject* boundary = path != NULL ? Boundary(self, args) : NULL;
  PyObject* number = boundary != NULL ? PyIter_Next(self->call_numbers) : NULL;
  const int is_loss = number != NULL ? PyObject_IsInstance(module, self->loss_type) : -1;
  if (is_loss >= 0) {
    PyObject* const fields[6] = {name,     Py_False, number,
                                 boundary, path,     is_loss ? Py_True : Py_False};
    call = MakeModuleCall((PyTypeObject*)gpuattr_module_call_type, fields);
    if (call != NULL && PyList_Append(modules, call) != 0) Py_CLEAR(call);
  } else if (number == NULL && boundary != NULL && !PyErr_Occurred()) {
    PyErr_SetString(PyExc_RuntimeError, "the call numbers ran out");
  }
  Py_XDECREF(number);
  Py_XDECREF(boundary);
  Py_XDECREF(path);
  Py_DECREF(modules);
  return call;
}

// enter(module, args): the owner's enter, in C for a submodule call whose name is known.
static PyObject* ModuleCallsEnter(PyObject* self_object, PyObject* const* args, Py_ssize_t count) {
  ModuleCallsObject* self = (ModuleCallsObject*)self_object;
  if (count != 2) {
    PyErr_SetString(PyExc_TypeError, "enter(module, args)");
    return NULL;
  }
  PyObject* state = ThreadState(self);
  if (state == NULL) return NULL;
  PyObject* name = KnownSubmoduleName(self, state, args[0]);
  PyObject* call = NULL;
  if (name != NULL) {
    call = EnterSubmodule(self, state, args[0], args[1], name);
    Py_DECREF(name);
  } else if (!PyErr_Occurred()) {
    call = PyObject_CallMethodObjArgs(self->owner, g_enter_method, args[0], args[1], NULL);
  }
  Py_DECREF(state);
  return call;
}

// Claims the nodes a submodule call made, as the owner's leave does: 0, or -1 with an exception.
static int ClaimNodes(ModuleCallsObject* self, ModuleCallObject* call, PyObject* kwargs,
                      PyObject* outputs) {
  const int claims = AttributeIsTrue(self->claims, g_enabled_attribute);
  if (claims <= 0) return claims;
  PyObject* nodes = GradNodeTuple(self, outputs);
  if (nodes == NULL) return -1;
  int failed = 0;
  if (PyTuple_Size(nodes) > 0) {
    PyObject* boundary = call->boundary;
    Py_INCREF(boundary);
    const int has_kwargs = PyObject_IsTrue(kwargs);
    if (has_kwargs != 0) {
      PyObject* keyword_nodes = has_kwargs > 0 ? GradNodeTuple(self, kwargs) : NULL;
      PyObject* whole = keyword_nodes != NULL ? PySequence_Concat(boundary, keyword_nodes) : NULL;
      Py_XDECREF(keyword_nodes);
      Py_DECREF(boundary);
      boundary = whole;
    }
    PyObject* claimed = boundary == NULL
                            ? NULL
                            : PyObject_CallMethodObjArgs(self->claims, g_claim_method, nodes,
                                                         call->number, boundary, call->path, NULL);
    failed = claimed == NULL ? -1 : 0;
    Py_XDECREF(claimed);
    Py_XDECREF(boundary);
  }
  Py_DECREF(nodes);
  return failed;
}

// leave(call, kwargs, outputs): the owner's leave, in C for a submodule call.
static PyObject* ModuleCallsLeave(PyObject* self_object, PyObject* const* args, Py_ssize_t count) {
  ModuleCallsObject* self = (ModuleCallsObject*)self_object;
  if (count != 3) {
    PyErr_SetString(PyExc_TypeError, "leave(call, kwargs, outputs)");
    return NULL;
  }
  ModuleCallObject* call = (ModuleCallObject*)args[0];
  if (Py_TYPE(args[0]) != (PyTypeObject*)gpuattr_module_call_type || call->is_root != Py_False) {
    return PyObject_CallMethodObjArgs(self->owner, g_leave_method, args[0], args[1], args[2], NULL);
  }
  PyObject* state = ThreadState(self);
  if (state == NULL) return NULL;
  PyObject* modules = ThreadList(state, g_modules_attribute);
  PyObject* names = modules != NULL ? ThreadList(state, g_names_attribute) : NULL;
  const Py_ssize_t open_calls = names != NULL ? PyList_Size(modules) : 0;
  // Closed already when it is not the innermost: by the step's close, or by the node it ran in.
  const int innermost = open_calls > 0 && PyList_GetItem(modules, open_calls - 1) == args[0];
  int failed = names == NULL;
  if (innermost) {
    failed = PyList_SetSlice(modules, open_calls - 1, open_calls, NULL) != 0 ||
             gpuattr_ranges_pop_to(self->ranges, names, call->name) != 0 ||
             (call->boundary != Py_None && ClaimNodes(self, call, args[1], args[2]) != 0);
  }
  Py_DECREF(state);
  if (failed) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef kModuleCallsMethods[] = {
    {"enter", (PyCFunction)(void (*)(void))ModuleCallsEnter, METH_FASTCALL,
     "enter(module, args): module_calls.ModuleCalls.enter."},
    {"leave", (PyCFunction)(void (*)(void))ModuleCallsLeave, METH_FASTCALL,
     "leave(call, kwargs, outputs): module_calls.ModuleCalls.leave."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot kModuleCallsSlots[] = {
    {Py_tp_doc,
     "ModuleCalls(owner, ranges, qualified_names, claims, grad_enabled, tensor_type, "
     "loss_type, call_numbers): the owner's enter and leave, in C for the usual call."},
    {Py_tp_init, ModuleCallsInit},
    {Py_tp_traverse, ModuleCallsTraverse},
    {Py_tp_clear, ModuleCallsClear},
    {Py_tp_dealloc, ModuleCallsDealloc},
    {Py_tp_methods, kModuleCallsMethods},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

PyType_Spec gpuattr_module_calls_spec = {
    .name = "gpuattr_pytorch._gpuattr_core.ModuleCalls",
    .basicsize = sizeof(ModuleCallsObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = kModuleCallsSlots,
};
