// TorchFort's door, shared by its files (torchfort.cpp: models and calls; torchfort_lists.cpp: tensor lists): a
// failure printed as TorchFort prints it and returned as its result code, and its datatypes as ktr's.
#pragma once

#include "torchfort/torchfort.h"

#include "api.hpp"
#include "ktr_array.h"
#include "ktr_c.h"

#include <string>
#include <vector>

namespace ktr::capi {

inline torchfort_result_t reported(char const* call, ktr_result_t r) {
  return torchfort_result_t(torchfort_reported(call, r));
}
inline torchfort_result_t refused(char const* call, ktr_result_t r, std::string const& message) {
  return torchfort_result_t(torchfort_refused(call, r, message));
}

/// TorchFort's datatype as ktr's; false for a value that is none of the four.
bool ktr_dtype(torchfort_datatype_t t, ktr_datatype_t& out);

/// A tensor list: the caller's arrays, described with their strides (nothing is copied until a call reads them).
struct TensorList {
  std::vector<ktr_array_t> tensors;
};

}  // namespace ktr::capi
