#include "point.pb.h"
int shared_work() {
  registries::Point point;
  point.set_x(1);
  return point.x();
}
