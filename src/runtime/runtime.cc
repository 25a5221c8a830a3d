// The runtime's core: its version, as an exported C function and as a global function.
#include <string>
#include <vector>

#include "demo/ffi.h"
#include "demo/runtime.h"

extern "C" const char* DemoRuntimeVersion(void) { return DEMO_VERSION; }

DEMO_FFI_REGISTER_GLOBAL("runtime.GetVersion",
                         [](const std::vector<int64_t>&) { return std::string(DEMO_VERSION); });
