#pragma once
#include <string>

namespace spm {
// "Trains" a model: the distinct characters of the corpus, in first-seen order.
std::string Train(const std::string& corpus);
}  // namespace spm
