#include "registry.h"

int split_compiler_version() { return 2; }

#ifdef SPLIT_RUNTIME_USES_COMPILER
namespace {
int Build() { return split_compiler_version(); }
}  // namespace
#else
int split_runtime_version();
namespace {
int Build() { return split_runtime_version() + 1; }
}  // namespace
#endif

namespace {
const int registered = split::Register("compiler.build", Build);
}  // namespace
