// An OBJECT library with a static-init registration, modelled on TVM's fpA_intB_gemm
// (fastertransformer.gemm_fp16_int). It must be linked into exactly one shared library, the
// runtime: linked into the compiler as well, the registration below runs twice in a process
// that loads both, and the registry aborts.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "demo/ffi.h"

namespace {

constexpr int64_t kMaxDim = 64;

// C = A * B for row-major int16 activations A (m x k) and int8 weights B (k x n), accumulated
// in int64 (the integer stand-in for fp16 x int GEMM). Inputs are fixed patterns, so the result
// is deterministic; returns a position-weighted checksum of C, which catches transposed or
// misplaced elements that a plain sum would not.
int64_t GemmChecksum(size_t m, size_t n, size_t k) {
  std::vector<int16_t> a(m * k);
  std::vector<int8_t> b(k * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t p = 0; p < k; ++p) a[i * k + p] = static_cast<int16_t>((i * 3 + p * 5) % 11) - 5;
  }
  for (size_t p = 0; p < k; ++p) {
    for (size_t j = 0; j < n; ++j) b[p * n + j] = static_cast<int8_t>((p * 7 + j * 2) % 13) - 6;
  }
  int64_t checksum = 0;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      int64_t c = 0;
      for (size_t p = 0; p < k; ++p) c += int64_t{a[i * k + p]} * int64_t{b[p * n + j]};
      checksum += c * static_cast<int64_t>(i * n + j + 1);
    }
  }
  return checksum;
}

}  // namespace

// gemm_fp16_int(m, n, k) -> checksum of the m x n product, each dimension in [1, 64]
DEMO_FFI_REGISTER_GLOBAL("contrib.gemm_fp16_int", [](const std::vector<int64_t>& args) {
  if (args.size() != 3) throw std::invalid_argument("contrib.gemm_fp16_int: expected m, n, k");
  for (int64_t d : args) {
    if (d < 1 || d > kMaxDim) {
      throw std::out_of_range("contrib.gemm_fp16_int: dimensions must be in [1, 64]");
    }
  }
  auto dim = [&](size_t i) { return static_cast<size_t>(args[i]); };  // checked above
  return std::to_string(GemmChecksum(dim(0), dim(1), dim(2)));
});
