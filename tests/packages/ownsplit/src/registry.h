#pragma once
#include <string>

namespace ownsplit {
int Register(const std::string& name, int (*function)());
int (*Lookup(const std::string& name))();
}  // namespace ownsplit
