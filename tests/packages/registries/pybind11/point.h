// The binding code both modules compile: pybind11 registers Point when a module is imported,
// into one registry per process unless it is bound module-local (POINT_EXTRA set to
// , py::module_local()).
#include <pybind11/pybind11.h>
#ifndef POINT_EXTRA
#define POINT_EXTRA
#endif
struct Point {
  int x = 0;
};
inline void bind_point(pybind11::module_& m) {
  pybind11::class_<Point>(m, "Point" POINT_EXTRA)
      .def(pybind11::init<>())
      .def_readwrite("x", &Point::x);
}
