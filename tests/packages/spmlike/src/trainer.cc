#include "trainer.h"

#include "processor.h"

namespace spm {
std::string Train(const std::string& corpus) {
  std::string model;
  for (char c : corpus) {
    if (c != ' ' && model.find(c) == std::string::npos) model += c;
  }
  // the trainer uses the runtime: its model must round-trip through Encode
  return Decode(model, Encode(model, corpus)).empty() && !corpus.empty() ? "" : model;
}
}  // namespace spm
