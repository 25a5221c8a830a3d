#pragma once
#include <string>

namespace split {
int Register(const std::string& name, int (*function)());
int (*Lookup(const std::string& name))();
}  // namespace split
