#include "registry.h"

namespace {
int GetShapeSize() { return 4; }
const int registered = ownsplit::Register("rpc.testing.GetShapeSize", GetShapeSize);
}  // namespace

int ownsplit_runtime_version() { return 1; }
