// A registry and a registration in one static library: linked into two libraries, each has a
// copy of both; exported, the second copy's registration binds to the first copy's registry.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

std::set<std::string>& registry() {
  static std::set<std::string> names;
  return names;
}

void register_name(const char* name) {
  if (!registry().insert(name).second) {
    std::fprintf(stderr, "duplicate registration %s\n", name);
    std::abort();
  }
}

int registered() { return static_cast<int>(registry().size()); }

namespace {
struct Registration {
  Registration() { register_name("statictwice.work"); }
} registration;
}  // namespace
