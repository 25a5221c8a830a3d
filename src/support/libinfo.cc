// Build information, compiled as its own OBJECT library and linked into the compiler (it is
// compiler-side metadata; the runtime does not carry it). The build defines the macros below on
// this translation unit only, as string literals, e.g. -DDEMO_GIT_COMMIT="1a2b3c4".
#include <string>
#include <vector>

#include "demo/ffi.h"

#ifndef DEMO_GIT_COMMIT
#define DEMO_GIT_COMMIT "unknown"
#endif
#ifndef DEMO_COMPILER
#define DEMO_COMPILER "unknown"
#endif
#ifndef DEMO_BUILD_TYPE
#define DEMO_BUILD_TYPE "unknown"
#endif

// GetLibInfo() -> "version=...;git=...;compiler=...;build=..."
DEMO_FFI_REGISTER_GLOBAL("support.GetLibInfo", [](const std::vector<int64_t>&) {
  return std::string("version=" DEMO_VERSION ";git=" DEMO_GIT_COMMIT
                     ";compiler=" DEMO_COMPILER ";build=" DEMO_BUILD_TYPE);
});
