#include "registry.h"

namespace {
int GetShapeSize() { return 4; }
const int registered = split::Register("rpc.testing.GetShapeSize", GetShapeSize);
}  // namespace

#ifdef SPLIT_RUNTIME_USES_COMPILER
int split_compiler_version();
int split_runtime_version() { return split_compiler_version(); }
#else
int split_runtime_version() { return 1; }
#endif
