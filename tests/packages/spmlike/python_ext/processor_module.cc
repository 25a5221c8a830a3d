// spmlike._processor: the runtime half of the binding (ships with the package).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "processor.h"

static PyObject* encode(PyObject*, PyObject* args) {
  const char* model;
  const char* text;
  if (!PyArg_ParseTuple(args, "ss", &model, &text)) return nullptr;
  return PyUnicode_FromString(spm::Encode(model, text).c_str());
}

static PyObject* decode(PyObject*, PyObject* args) {
  const char* model;
  const char* pieces;
  if (!PyArg_ParseTuple(args, "ss", &model, &pieces)) return nullptr;
  return PyUnicode_FromString(spm::Decode(model, pieces).c_str());
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "Encode text with a model."},
    {"decode", decode, METH_VARARGS, "Decode pieces with a model."},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_processor", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__processor() { return PyModule_Create(&module); }
