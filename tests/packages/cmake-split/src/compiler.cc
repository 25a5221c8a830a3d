#include "registry.h"

int split_runtime_version();

namespace {
int Build() { return split_runtime_version() + 1; }
const int registered = split::Register("compiler.build", Build);
}  // namespace
