// ctest: the checksum is zlib's CRC-32, the version is the recipe's, compiler and core registered.
#include <cstdio>
#include <cstring>
#include <string>

#include "acme/acme.h"

int main() {
  if (acme_checksum("acme", 4) != 0x05c4ba3eu) {
    std::fprintf(stderr, "checksum: %08x\n", acme_checksum("acme", 4));
    return 1;
  }
  if (std::string(acme_version()) != "0.3.dev0") return 2;
  const char* names[16];
  int total = acme_list(names, 16);
  bool compiler = false;
  for (int i = 0; i < total && i < 16; ++i) compiler |= std::strcmp(names[i], "compiler.compile") == 0;
  return compiler ? 0 : 3;
}
