// The global function registry.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "demo/ffi.h"

namespace demo::ffi {
namespace {

struct State {
  std::mutex mutex;  // a library may be dlopen()ed while another thread looks functions up
  std::map<std::string, Function> functions;  // node-based: pointers to entries stay valid
};

// A function-local static, not a namespace-scope global: other libraries register from their
// own static initializers, which may run before this library's globals would have been
// constructed. The first call constructs it, whatever the order. It is deliberately leaked:
// destroying it at exit would run the destructors of functions whose code lives in other
// libraries, and lookups during exit would touch a dead map.
State& Registry() {
  static State* state = new State;
  return *state;
}

}  // namespace

void RegisterGlobal(const char* name, Function fn) {
  State& state = Registry();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.functions.emplace(name, std::move(fn)).second) {
    // The same registration ran twice in one process: typically an object library linked into
    // two shared libraries, or a second copy of a library grafted into a wheel. Continuing
    // would silently pick one of the copies, so fail loudly instead.
    std::fprintf(stderr, "demo.ffi: global function '%s' is already registered\n", name);
    std::abort();
  }
}

const Function* GetGlobal(const std::string& name) {
  State& state = Registry();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = state.functions.find(name);
  return it == state.functions.end() ? nullptr : &it->second;
}

std::vector<std::string> ListGlobalNames() {
  State& state = Registry();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::vector<std::string> names;
  names.reserve(state.functions.size());
  for (const auto& entry : state.functions) names.push_back(entry.first);
  return names;  // std::map iterates in sorted order
}

}  // namespace demo::ffi
