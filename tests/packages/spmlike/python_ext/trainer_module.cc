// spmlike._trainer: the trainer half of the binding (ships in the add-on wheel).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "trainer.h"

static PyObject* train(PyObject*, PyObject* args) {
  const char* corpus;
  if (!PyArg_ParseTuple(args, "s", &corpus)) return nullptr;
  return PyUnicode_FromString(spm::Train(corpus).c_str());
}

static PyMethodDef methods[] = {
    {"train", train, METH_VARARGS, "Train a model on a corpus."},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trainer", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__trainer() { return PyModule_Create(&module); }
