// Test helpers for the RPC server. They live in the runtime, not the compiler, because minrpc
// is a runtime-only executable and must find them there (as TVM's rpc.testing.* helpers do).
#include <stdexcept>
#include <string>
#include <vector>

#include "demo/ffi.h"

// GetShapeElem(d0, ..., dn-1, i) -> di
DEMO_FFI_REGISTER_GLOBAL("rpc.testing.GetShapeElem", [](const std::vector<int64_t>& args) {
  if (args.empty()) {
    throw std::invalid_argument("rpc.testing.GetShapeElem: expected dims followed by an index");
  }
  const int64_t ndim = static_cast<int64_t>(args.size()) - 1;
  const int64_t index = args.back();
  if (index < 0 || index >= ndim) {
    throw std::out_of_range("rpc.testing.GetShapeElem: index " + std::to_string(index) +
                            " out of range for a shape of " + std::to_string(ndim) + " dims");
  }
  return std::to_string(args[static_cast<size_t>(index)]);
});

// GetShapeSize(d0, ..., dn-1) -> d0 * ... * dn-1 (1 for a scalar's empty shape)
DEMO_FFI_REGISTER_GLOBAL("rpc.testing.GetShapeSize", [](const std::vector<int64_t>& dims) {
  int64_t size = 1;
  for (int64_t d : dims) {
    if (d < 0) throw std::invalid_argument("rpc.testing.GetShapeSize: negative dimension");
    if (__builtin_mul_overflow(size, d, &size)) {
      throw std::overflow_error("rpc.testing.GetShapeSize: size overflows int64");
    }
  }
  return std::to_string(size);
});
