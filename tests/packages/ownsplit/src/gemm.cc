#include "registry.h"

namespace {
int GemmFp16Int() { return 16; }
const int registered = ownsplit::Register("contrib.gemm_fp16_int", GemmFp16Int);
}  // namespace
