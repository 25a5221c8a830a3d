// The C API over the registry, for Python ctypes and C-style callers such as minrpc.
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "demo/ffi.h"

namespace {

// Copies `text` into out[0 .. out_size), truncating and always NUL-terminating.
void CopyOut(const std::string& text, char* out, size_t out_size) {
  if (out == nullptr || out_size == 0) return;
  size_t n = text.size() < out_size - 1 ? text.size() : out_size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Names as C strings that live as long as the process, whatever the registry does with its
// own keys. Deliberately leaked so that pointers handed out stay valid during exit too.
const char* InternName(const std::string& name) {
  static std::mutex mutex;
  static auto* interned = new std::set<std::string>;  // node-based: c_str() never moves
  std::lock_guard<std::mutex> lock(mutex);
  return interned->insert(name).first->c_str();
}

}  // namespace

extern "C" {

int DemoFFIListGlobals(const char** names, int capacity) {
  std::vector<std::string> all = demo::ffi::ListGlobalNames();
  for (size_t i = 0; i < all.size() && static_cast<int>(i) < capacity; ++i) {
    names[i] = InternName(all[i]);
  }
  return static_cast<int>(all.size());
}

int DemoFFICall(const char* name, const int64_t* args, int num_args, char* out,
                size_t out_size) {
  if (name == nullptr || num_args < 0 || (num_args > 0 && args == nullptr)) {
    CopyOut("demo.ffi: invalid arguments to DemoFFICall", out, out_size);
    return -2;
  }
  const demo::ffi::Function* fn = demo::ffi::GetGlobal(name);
  if (fn == nullptr) {
    CopyOut(std::string("demo.ffi: global function '") + name + "' is not registered", out,
            out_size);
    return -1;
  }
  try {
    CopyOut((*fn)(std::vector<int64_t>(args, args + num_args)), out, out_size);
    return 0;
  } catch (const std::exception& e) {
    CopyOut(e.what(), out, out_size);
  } catch (...) {
    CopyOut("demo.ffi: unknown exception", out, out_size);
  }
  return -2;
}

const char* DemoFFIVersion(void) { return DEMO_VERSION; }

}  // extern "C"
