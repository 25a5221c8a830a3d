// one's own code: it uses the static library (STATIC_TWICE_LLVM: LLVM's MC layer, whose
// MCAsmInfo.cpp object comes with its options that register with LLVMSupport's registry).
#ifdef STATIC_TWICE_LLVM
#include "llvm/MC/MCAsmInfo.h"
extern "C" __attribute__((visibility("default"))) int one() {
  llvm::MCAsmInfo info;
  return info.getCodePointerSize() > 0 ? 1 : 0;
}
#else
int registered();
extern "C" __attribute__((visibility("default"))) int one() { return registered(); }
#endif
