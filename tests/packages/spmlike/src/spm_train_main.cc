#include <iostream>

#include "trainer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: spm_train CORPUS\n";
    return 2;
  }
  std::cout << spm::Train(argv[1]) << "\n";
  return 0;
}
