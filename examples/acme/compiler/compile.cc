// acme_compiler: the optional library, linking acme_core.
#include "acme/acme.h"

namespace {

struct Registration {
  Registration() { acme_register("compiler.compile"); }
};

const Registration kCompile;

}  // namespace
