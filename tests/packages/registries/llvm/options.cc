// MCAsmInfo.cpp's object file comes with this use of it, and with it LLVM's own options
// (static cl::opt objects) that register with LLVMSupport's registry when the library loads.
#include "llvm/MC/MCAsmInfo.h"
int shared_work() {
  llvm::MCAsmInfo info;
  return info.getCodePointerSize() > 0 ? 1 : 0;
}
