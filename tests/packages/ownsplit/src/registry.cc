#include "registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>

namespace ownsplit {
namespace {
std::map<std::string, int (*)()>& Table() {
  static std::map<std::string, int (*)()> table;  // function-local: safe at static init
  return table;
}
}  // namespace

int Register(const std::string& name, int (*function)()) {
  if (!Table().emplace(name, function).second) {
    std::fprintf(stderr, "duplicate registration: %s\n", name.c_str());
    std::abort();
  }
  return 0;
}

int (*Lookup(const std::string& name))() {
  auto found = Table().find(name);
  return found == Table().end() ? nullptr : found->second;
}
}  // namespace ownsplit

// The C API the Python package calls through ctypes.
extern "C" int ownsplit_call(const char* name) {
  auto function = ownsplit::Lookup(name);
  return function == nullptr ? -1 : function();
}
