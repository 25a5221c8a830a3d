/* C source of acme_core: the checksum, through zlib (found with pkg-config). */
#include <zlib.h>

#include "acme/acme.h"

#ifndef ACME_REQUIRED_DEFINE
#error "ACME_REQUIRED_DEFINE must be defined: the recipe's definitions did not reach this file"
#endif

uint32_t acme_checksum(const void* data, size_t size) {
  return (uint32_t)crc32(0L, (const Bytef*)data, (uInt)size);
}
