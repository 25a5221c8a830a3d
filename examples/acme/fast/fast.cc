// The fast checksum: an object library of acme_core, built only while ACME_WITH_FAST is on.
#include "acme/acme.h"

namespace {

struct Registration {
  Registration() { acme_register("fast.checksum"); }
};

const Registration kFast;

}  // namespace
