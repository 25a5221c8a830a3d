/* The rpc backend. */
#include "backend.h"
