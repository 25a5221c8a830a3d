// C++ source of acme_core: the registry of names, and the version.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "acme/acme.h"

#ifndef ACME_REQUIRED_DEFINE
#error "ACME_REQUIRED_DEFINE must be defined: the recipe's definitions did not reach this file"
#endif

namespace {

std::set<std::string>& Names() {
  static auto* names = new std::set<std::string>;  // leaked: registrations outlive exit order
  return *names;
}

struct Registration {
  explicit Registration(const char* name) { acme_register(name); }
};

const Registration kChecksum("core.checksum");
const Registration kVersion("core.version");

}  // namespace

extern "C" void acme_register(const char* name) {
  if (!Names().insert(name).second) {
    std::fprintf(stderr, "acme: '%s' is already registered\n", name);
    std::abort();
  }
}

extern "C" int acme_list(const char** names, int capacity) {
  int index = 0;
  for (const std::string& name : Names()) {
    if (index < capacity) names[index] = name.c_str();
    ++index;
  }
  return index;
}

extern "C" const char* acme_version(void) { return ACME_VERSION; }
