#include "registry.h"

int ownsplit_runtime_version();

namespace {
int Build() { return ownsplit_runtime_version() + 1; }
const int registered = ownsplit::Register("compiler.build", Build);
}  // namespace
