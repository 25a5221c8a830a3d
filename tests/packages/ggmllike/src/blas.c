/* The blas backend. */
#include "backend.h"
