// A Python extension module (MODULE is one or two) whose import runs the shared code.
#include <Python.h>
int shared_work();
#define CONCAT(a, b) a##b
#define INIT(name) CONCAT(PyInit_, name)
#define STR(name) #name
#define NAME_OF(name) STR(name)
static PyModuleDef definition = {PyModuleDef_HEAD_INIT, NAME_OF(MODULE), nullptr, -1, nullptr};
PyMODINIT_FUNC INIT(MODULE)() {
  if (shared_work() != 1) return nullptr;
  return PyModule_Create(&definition);
}
