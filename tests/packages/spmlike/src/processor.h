// The runtime API. No export macros: like sentencepiece, the project relies on default visibility.
#pragma once
#include <string>

namespace spm {
std::string Encode(const std::string& model, const std::string& text);
std::string Decode(const std::string& model, const std::string& pieces);
}  // namespace spm

extern "C" int spm_encode_length(const char* model, const char* text);
