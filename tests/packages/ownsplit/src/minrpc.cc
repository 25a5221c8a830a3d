#include <cstdio>

#include "registry.h"

// Reaches the runtime through the registry alone: no symbol of the runtime is referenced.
int main() {
  auto function = ownsplit::Lookup("rpc.testing.GetShapeSize");
  if (function == nullptr) {
    std::fprintf(stderr, "rpc.testing.GetShapeSize is not registered\n");
    return 1;
  }
  std::printf("%d\n", function());
  return 0;
}
