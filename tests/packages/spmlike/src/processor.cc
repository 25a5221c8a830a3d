#include "processor.h"

#include "config.h"

namespace protolite {
std::string Serialize(const std::string& text);
}

namespace spm {
// A "model" is the characters it knows; encoding keeps those, separated by spaces.
std::string Encode(const std::string& model, const std::string& text) {
  std::string out;
  for (char c : text) {
    if (model.find(c) == std::string::npos) continue;
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

std::string Decode(const std::string& model, const std::string& pieces) {
  std::string out;
  for (char c : pieces) {
    if (c != ' ' && model.find(c) != std::string::npos) out += c;
  }
  return protolite::Serialize(out).substr(3);
}
}  // namespace spm

extern "C" int spm_encode_length(const char* model, const char* text) {
  return static_cast<int>(spm::Encode(model, text).size());
}

extern "C" const char* spm_version() { return SPM_VERSION; }

extern "C" int spm_nfkc_enabled() {
#ifdef SPM_ENABLE_NFKC
  return 1;
#else
  return 0;
#endif
}
