"""CMake: the files generated from a plan, the compiler launcher, running cmake and ninja, and
reading the results through the File API."""
