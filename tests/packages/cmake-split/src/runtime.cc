#include "registry.h"

namespace {
int GetShapeSize() { return 4; }
const int registered = split::Register("rpc.testing.GetShapeSize", GetShapeSize);
}  // namespace

int split_runtime_version() { return 1; }
