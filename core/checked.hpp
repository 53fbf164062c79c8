// Checked integer arithmetic for sizes that come from input (model descriptions, file headers, flags): a product
// or sum that would overflow int64 throws ktr::Error naming what was being computed, instead of wrapping into a
// small or negative allocation size.
#pragma once

#include "error.hpp"

#include <cstdint>
#include <limits>

namespace ktr {

/// a * b for non-negative a, b; throws ktr::Error("<what>: size overflows 64 bits") on overflow.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, char const* what) {
  std::int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    throw Error(std::string(what) + ": size overflows 64 bits");
  return r;
}

/// a + b for non-negative a, b; throws ktr::Error on overflow.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, char const* what) {
  std::int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
    throw Error(std::string(what) + ": size overflows 64 bits");
  return r;
}

}  // namespace ktr
