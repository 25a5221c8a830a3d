// The compiler's entry point, as an exported C function and as a global function.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "demo/compiler.h"
#include "demo/ffi.h"
#include "demo/runtime.h"

extern "C" int DemoCompilerBuild(int64_t x, int64_t* out) {
  // The compiler emits code for the runtime it was built with. Calling into the runtime here
  // is also what makes libdemo_compiler.so genuinely NEEDED-depend on libdemo_runtime.so.
  if (std::strcmp(DemoRuntimeVersion(), DEMO_VERSION) != 0) return -1;
  *out = x * 2;
  return 0;
}

// build(x) -> "built:<x * 2>"
DEMO_FFI_REGISTER_GLOBAL("compiler.build", [](const std::vector<int64_t>& args) {
  if (args.size() != 1) throw std::invalid_argument("compiler.build: expected one argument");
  int64_t result = 0;
  if (DemoCompilerBuild(args[0], &result) != 0) {
    throw std::runtime_error(std::string("compiler.build: runtime version ") +
                             DemoRuntimeVersion() + " does not match compiler version " +
                             DEMO_VERSION);
  }
  return "built:" + std::to_string(result);
});
