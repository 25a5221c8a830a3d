// A C++ test of the whole library stack, run by ctest. No framework: each check prints one
// line, the last line is "<n> passed, <m> failed", and the exit code is 1 if anything failed.
//
// It links the compiler (and through it the runtime and ffi) and calls DemoCompilerBuild
// directly, so the compiler stays NEEDED even under --as-needed.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "demo/compiler.h"
#include "demo/ffi.h"

namespace {

int passed = 0;
int failed = 0;

void Check(const std::string& what, bool ok, const std::string& detail = "") {
  (ok ? passed : failed) += 1;
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(), ok || detail.empty() ? "" : ": ",
              ok ? "" : detail.c_str());
}

struct CallResult {
  int rc;
  std::string out;
};

CallResult Call(const char* name, const std::vector<int64_t>& args, size_t out_size = 256) {
  std::vector<char> out(out_size, '\x7f');
  int rc = DemoFFICall(name, args.data(), static_cast<int>(args.size()), out.data(), out.size());
  return {rc, std::string(out.data())};
}

// Checks that `name` called with `args` succeeds and returns `expected`.
void CheckCall(const char* name, const std::vector<int64_t>& args, const std::string& expected) {
  CallResult r = Call(name, args);
  Check(std::string("call ") + name + " = " + expected, r.rc == 0 && r.out == expected,
        "rc=" + std::to_string(r.rc) + " out='" + r.out + "'");
}

void CheckRegistrations() {
  const std::vector<std::string> expected = {
      "compiler.build",           "contrib.gemm_fp16_int", "rpc.testing.GetShapeElem",
      "rpc.testing.GetShapeSize", "runtime.GetVersion",    "support.GetLibInfo"};
  const std::vector<std::string> names = demo::ffi::ListGlobalNames();
  std::string missing;
  for (const std::string& name : expected) {
    if (std::count(names.begin(), names.end(), name) != 1) missing += " " + name;
  }
  Check("the 6 expected functions are registered exactly once", missing.empty(),
        "missing or duplicated:" + missing);
  Check("ListGlobalNames is sorted", std::is_sorted(names.begin(), names.end()));

  // The C API lists the same names, reports the total even when the buffer is short, and
  // fills no more than the capacity it is given.
  if (names.empty()) {
    Check("DemoFFIListGlobals matches ListGlobalNames", false, "nothing is registered");
    return;
  }
  std::vector<const char*> c_names(names.size() + 1, nullptr);
  int total = DemoFFIListGlobals(c_names.data(), static_cast<int>(names.size()) - 1);
  bool same = total == static_cast<int>(names.size()) && c_names[names.size() - 1] == nullptr;
  DemoFFIListGlobals(c_names.data(), static_cast<int>(c_names.size()));
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i] == c_names[i];
  Check("DemoFFIListGlobals matches ListGlobalNames", same);
}

void CheckCalls() {
  CheckCall("runtime.GetVersion", {}, DEMO_VERSION);
  CheckCall("rpc.testing.GetShapeSize", {2, 3, 4}, "24");
  CheckCall("rpc.testing.GetShapeElem", {2, 3, 4, 1}, "3");
  CheckCall("contrib.gemm_fp16_int", {4, 5, 6}, "-402");
  CheckCall("compiler.build", {21}, "built:42");

  CallResult info = Call("support.GetLibInfo", {});
  Check("call support.GetLibInfo has version, git, compiler and build",
        info.rc == 0 && info.out.rfind("version=" DEMO_VERSION ";git=", 0) == 0 &&
            info.out.find(";compiler=") != std::string::npos &&
            info.out.find(";build=") != std::string::npos,
        "rc=" + std::to_string(info.rc) + " out='" + info.out + "'");

  int64_t built = 0;
  Check("DemoCompilerBuild(21) = 42", DemoCompilerBuild(21, &built) == 0 && built == 42,
        "got " + std::to_string(built));
}

void CheckErrors() {
  CallResult unknown = Call("no.such.function", {});
  Check("an unknown name gives -1", unknown.rc == -1, "rc=" + std::to_string(unknown.rc));

  CallResult bad_index = Call("rpc.testing.GetShapeElem", {2, 3, 4, 3});
  Check("a throwing function gives -2 and its message",
        bad_index.rc == -2 && bad_index.out.find("out of range") != std::string::npos,
        "rc=" + std::to_string(bad_index.rc) + " out='" + bad_index.out + "'");

  CallResult truncated = Call("compiler.build", {21}, 4);
  Check("a short output buffer is truncated and NUL-terminated",
        truncated.rc == 0 && truncated.out == "bui", "out='" + truncated.out + "'");
}

}  // namespace

int main() {
  CheckRegistrations();
  CheckCalls();
  CheckErrors();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
