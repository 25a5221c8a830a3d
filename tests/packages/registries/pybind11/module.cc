#include "point.h"
PYBIND11_MODULE(MODULE, m) { bind_point(m); }
