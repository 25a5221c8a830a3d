/* acme._capi: a CPython extension module over acme's C API (links acme_core). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "acme/acme.h"

static PyObject* capi_checksum(PyObject* self, PyObject* args) {
  Py_buffer data;
  (void)self;
  if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
  uint32_t value = acme_checksum(data.buf, (size_t)data.len);
  PyBuffer_Release(&data);
  return PyLong_FromUnsignedLong(value);
}

static PyObject* capi_version(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(acme_version());
}

static PyMethodDef capi_methods[] = {
    {"checksum", capi_checksum, METH_VARARGS, "CRC-32 of a bytes-like object, by zlib."},
    {"version", capi_version, METH_NOARGS, "The version acme_core was built as."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef capi_module = {PyModuleDef_HEAD_INIT, "acme._capi", NULL, -1,
                                         capi_methods};

PyMODINIT_FUNC PyInit__capi(void) { return PyModule_Create(&capi_module); }
