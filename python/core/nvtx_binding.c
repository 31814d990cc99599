// The compiled core's NVTX binding (gpuattr_core.c): the methods of nvtx.py's binding, each a
// direct call into NVTX3, header-only (its loader finds the tool NVTX_INJECTION64_PATH names, and
// makes every call a no-op without one). Names are encoded or registered once, in dicts.
// Runs on: whichever thread the annotator's hooks run on, holding the GIL.
#include <nvtx3/nvToolsExt.h>

#include "core.h"

static const char kContextDomain[] = "gpuattr.context";

typedef struct {
  PyObject ob_base;  // PyObject_HEAD
  nvtxDomainHandle_t context_domain;
  PyObject* encoded_names;  // range name (str) -> its UTF-8 bytes
  PyObject* context_names;  // context name (str) -> its registered handle (int)
  PyObject* domains;        // domain name (bytes) -> its handle (int)
  PyObject* messages;       // (domain name, message) -> its registered handle (int)
} NvtxObject;

// `name` as UTF-8 bytes (unencodable characters replaced), as the pure-Python binding encodes.
static PyObject* EncodeName(PyObject* name) {
  return PyUnicode_AsEncodedString(name, "utf-8", "replace");
}

static nvtxEventAttributes_t RegisteredAttributes(nvtxStringHandle_t message) {
  nvtxEventAttributes_t attributes = {0};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = message;
  return attributes;
}

static int NvtxInit(PyObject* self_object, PyObject* args, PyObject* kwargs) {
  NvtxObject* self = (NvtxObject*)self_object;
  if (!PyArg_ParseTuple(args, ":Nvtx") || (kwargs != NULL && PyDict_Size(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "Nvtx() takes no arguments");
    return -1;
  }
  self->encoded_names = PyDict_New();
  self->context_names = PyDict_New();
  self->domains = PyDict_New();
  self->messages = PyDict_New();
  if (self->encoded_names == NULL || self->context_names == NULL || self->domains == NULL ||
      self->messages == NULL) {
    return -1;
  }
  self->context_domain = nvtxDomainCreateA(kContextDomain);
  return 0;
}

static void NvtxDealloc(PyObject* self_object) {
  NvtxObject* self = (NvtxObject*)self_object;
  Py_XDECREF(self->encoded_names);
  Py_XDECREF(self->context_names);
  Py_XDECREF(self->domains);
  Py_XDECREF(self->messages);
  PyTypeObject* type = Py_TYPE(self_object);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_object(self_object);
  Py_DECREF(type);
}

// push(name): nvtxRangePushA with the name's bytes, encoded once per name.
static PyObject* NvtxPush(PyObject* self_object, PyObject* name) {
  NvtxObject* self = (NvtxObject*)self_object;
  PyObject* encoded = PyDict_GetItemWithError(self->encoded_names, name);  // borrowed
  if (encoded == NULL) {
    if (PyErr_Occurred() != NULL) return NULL;
    encoded = EncodeName(name);
    if (encoded == NULL) return NULL;
    const int stored = PyDict_SetItem(self->encoded_names, name, encoded);
    Py_DECREF(encoded);  // the dict holds it
    if (stored != 0) return NULL;
  }
  const char* bytes = PyBytes_AsString(encoded);
  if (bytes == NULL) return NULL;
  nvtxRangePushA(bytes);
  Py_RETURN_NONE;
}

int gpuattr_nvtx_push(PyObject* nvtx, PyObject* name) {
  PyObject* result = NvtxPush(nvtx, name);
  Py_XDECREF(result);
  return result == NULL ? -1 : 0;
}

void gpuattr_nvtx_pop(void) { nvtxRangePop(); }

static PyObject* NvtxPop(PyObject* self_object, PyObject* unused) {
  (void)self_object;
  (void)unused;
  nvtxRangePop();
  Py_RETURN_NONE;
}

// mark(text): nvtxMarkA; marks are rare (a disabled annotator, a compiled graph without a map).
static PyObject* NvtxMark(PyObject* self_object, PyObject* text) {
  (void)self_object;
  PyObject* encoded = EncodeName(text);
  if (encoded == NULL) return NULL;
  const char* bytes = PyBytes_AsString(encoded);
  if (bytes != NULL) nvtxMarkA(bytes);
  Py_DECREF(encoded);
  if (bytes == NULL) return NULL;
  Py_RETURN_NONE;
}

// The handle stored under `key` in `cache`, else register(domain, encoded `text`) stored there.
// NULL with an exception set on failure; NULL without one where no tool is loaded (NVTX then
// registers nothing).
static void* CachedHandle(PyObject* cache, PyObject* key, nvtxDomainHandle_t domain,
                          PyObject* text) {
  PyObject* cached = PyDict_GetItemWithError(cache, key);  // borrowed
  if (cached != NULL) return PyLong_AsVoidPtr(cached);
  if (PyErr_Occurred() != NULL) return NULL;
  PyObject* encoded = EncodeName(text);
  if (encoded == NULL) return NULL;
  const char* bytes = PyBytes_AsString(encoded);
  void* handle = bytes == NULL ? NULL : (void*)nvtxDomainRegisterStringA(domain, bytes);
  Py_DECREF(encoded);
  if (bytes == NULL) return NULL;
  PyObject* stored = PyLong_FromVoidPtr(handle);
  if (stored == NULL) return NULL;
  const int failed = PyDict_SetItem(cache, key, stored);
  Py_DECREF(stored);
  return failed != 0 ? NULL : handle;
}

// push_context(name): a range of the gpuattr.context domain, named by a registered string (the
// shim keeps it on the thread's stack for the path of what is pushed above it).
static PyObject* NvtxPushContext(PyObject* self_object, PyObject* name) {
  NvtxObject* self = (NvtxObject*)self_object;
  void* handle = CachedHandle(self->context_names, name, self->context_domain, name);
  if (handle == NULL) {
    if (PyErr_Occurred() != NULL) return NULL;
    Py_RETURN_NONE;  // no tool loaded: nothing records the range
  }
  const nvtxEventAttributes_t attributes = RegisteredAttributes((nvtxStringHandle_t)handle);
  nvtxDomainRangePushEx(self->context_domain, &attributes);
  Py_RETURN_NONE;
}

static PyObject* NvtxPopContext(PyObject* self_object, PyObject* unused) {
  (void)unused;
  nvtxDomainRangePop(((NvtxObject*)self_object)->context_domain);
  Py_RETURN_NONE;
}

// The handle of the domain named `domain_name` (bytes), created at its first use.
static nvtxDomainHandle_t DomainNamed(NvtxObject* self, PyObject* domain_name) {
  PyObject* cached = PyDict_GetItemWithError(self->domains, domain_name);  // borrowed
  if (cached != NULL) return (nvtxDomainHandle_t)PyLong_AsVoidPtr(cached);
  if (PyErr_Occurred() != NULL) return NULL;
  const char* name = PyBytes_AsString(domain_name);
  if (name == NULL) return NULL;
  nvtxDomainHandle_t domain = nvtxDomainCreateA(name);
  PyObject* stored = PyLong_FromVoidPtr(domain);
  if (stored == NULL) return NULL;
  const int failed = PyDict_SetItem(self->domains, domain_name, stored);
  Py_DECREF(stored);
  return failed != 0 ? NULL : domain;
}

// domain_mark(domain, message, value): nvtxDomainMarkEx in `domain` (bytes) with the registered
// `message` (str) and `value` (int) as an unsigned 64-bit payload (None: no payload).
static PyObject* NvtxDomainMark(PyObject* self_object, PyObject* const* args, Py_ssize_t count) {
  NvtxObject* self = (NvtxObject*)self_object;
  if (count != 3) {
    PyErr_SetString(PyExc_TypeError, "domain_mark(domain, message, value)");
    return NULL;
  }
  PyObject* domain_name = args[0];
  PyObject* message = args[1];
  PyObject* value = args[2];
  unsigned long long payload = 0;
  if (value != Py_None) {
    payload = PyLong_AsUnsignedLongLong(value);
    if (PyErr_Occurred() != NULL) return NULL;
  }
  nvtxDomainHandle_t domain = DomainNamed(self, domain_name);
  if (domain == NULL) {
    if (PyErr_Occurred() != NULL) return NULL;
    Py_RETURN_NONE;  // no tool loaded: NVTX made no domain
  }
  PyObject* key = PyTuple_Pack(2, domain_name, message);
  if (key == NULL) return NULL;
  void* handle = CachedHandle(self->messages, key, domain, message);
  Py_DECREF(key);
  if (handle == NULL) {
    if (PyErr_Occurred() != NULL) return NULL;
    Py_RETURN_NONE;
  }
  nvtxEventAttributes_t attributes = RegisteredAttributes((nvtxStringHandle_t)handle);
  if (value != Py_None) {
    attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    attributes.payload.ullValue = payload;
  }
  nvtxDomainMarkEx(domain, &attributes);
  Py_RETURN_NONE;
}

static PyMethodDef kNvtxMethods[] = {
    {"push", NvtxPush, METH_O, "push(name): nvtxRangePushA."},
    {"pop", NvtxPop, METH_NOARGS, "pop(): nvtxRangePop."},
    {"mark", NvtxMark, METH_O, "mark(text): nvtxMarkA."},
    {"push_context", NvtxPushContext, METH_O, "push_context(name): a gpuattr.context range."},
    {"pop_context", NvtxPopContext, METH_NOARGS, "pop_context(): its end."},
    {"domain_mark", (PyCFunction)(void (*)(void))NvtxDomainMark, METH_FASTCALL,
     "domain_mark(domain, message, value): nvtxDomainMarkEx with a u64 payload or none."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot kNvtxSlots[] = {
    {Py_tp_doc, "NVTX3 called directly: the methods of the annotator's NVTX binding."},
    {Py_tp_init, NvtxInit},
    {Py_tp_dealloc, NvtxDealloc},
    {Py_tp_methods, kNvtxMethods},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

PyType_Spec gpuattr_nvtx_spec = {
    .name = "gpuattr_pytorch._gpuattr_core.Nvtx",
    .basicsize = sizeof(NvtxObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = kNvtxSlots,
};
