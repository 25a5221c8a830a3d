// minrpc: a runtime-only executable, modelled on TVM's minimal RPC server.
//
// It links libdemo_runtime.so but references ONLY ffi symbols: it needs the runtime solely for
// the rpc.testing.* functions the runtime registers at load time. A linker running with
// --as-needed (Debian's and Ubuntu's gcc default) sees no runtime symbol used and drops the
// runtime's DT_NEEDED entry, so the registrations never run and the lookups below fail.
// The build must link the runtime with --no-as-needed; this program checks that it did.
//
// Exit codes: 0 ok, 3 a function is not registered (runtime not loaded), 4 a wrong result.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "demo/ffi.h"  // ffi only: nothing from demo/runtime.h, on purpose

namespace {

constexpr const char* kGetShapeElem = "rpc.testing.GetShapeElem";
constexpr const char* kGetShapeSize = "rpc.testing.GetShapeSize";

// The registered function `name`, or nullptr after explaining the likely cause on stderr.
const demo::ffi::Function* Lookup(const char* name) {
  const demo::ffi::Function* fn = demo::ffi::GetGlobal(name);
  if (fn == nullptr) {
    std::fprintf(stderr,
                 "minrpc: global function '%s' is not registered; was the runtime library "
                 "dropped from DT_NEEDED (link it with --no-as-needed)?\n",
                 name);
  }
  return fn;
}

std::string Join(const std::vector<int64_t>& args) {
  std::string text;
  for (size_t i = 0; i < args.size(); ++i) text += (i ? "," : "") + std::to_string(args[i]);
  return text;
}

// Calls `fn` (registered as `name`) and compares its result with `expected`; prints the outcome.
bool CallAndCheck(const char* name, const demo::ffi::Function& fn,
                  const std::vector<int64_t>& args, const std::string& expected) {
  std::string result;
  try {
    result = fn(args);
  } catch (const std::exception& e) {
    result = std::string("<threw: ") + e.what() + ">";
  }
  if (result != expected) {
    std::fprintf(stderr, "minrpc: %s(%s) = %s, expected %s\n", name, Join(args).c_str(),
                 result.c_str(), expected.c_str());
    return false;
  }
  std::printf("minrpc: %s(%s) = %s\n", name, Join(args).c_str(), result.c_str());
  return true;
}

}  // namespace

int main() {
  const demo::ffi::Function* get_shape_size = Lookup(kGetShapeSize);
  const demo::ffi::Function* get_shape_elem = Lookup(kGetShapeElem);
  if (get_shape_size == nullptr || get_shape_elem == nullptr) return 3;
  // A shape of {2, 3, 4}: 24 elements, and dimension 1 is 3.
  bool ok = CallAndCheck(kGetShapeSize, *get_shape_size, {2, 3, 4}, "24");
  ok = CallAndCheck(kGetShapeElem, *get_shape_elem, {2, 3, 4, 1}, "3") && ok;
  return ok ? 0 : 4;
}
