// Prints acme's version and registered names: runtime only, through acme_core's registry.
#include <cstdio>

#include "acme/acme.h"

int main() {
  const char* names[16];
  int total = acme_list(names, 16);
  std::printf("acme %s\n", acme_version());
  for (int i = 0; i < total && i < 16; ++i) std::printf("%s\n", names[i]);
  return 0;
}
