#include <iostream>

#include "processor.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: spm_encode MODEL TEXT\n";
    return 2;
  }
  std::cout << spm::Encode(argv[1], argv[2]) << "\n";
  return 0;
}
