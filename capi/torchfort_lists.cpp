// TorchFort's tensor lists (torchfort_tensor_list_*) and the calls that take them (torchfort_train_multiarg,
// torchfort_inference_multiarg): ktr's models take one input and give one output, so a list holds one tensor.
#include "../core/error.hpp"
#include "torchfort_door.hpp"

#include <new>

using ktr::capi::ktr_dtype;
using ktr::capi::refused;
using ktr::capi::reported;
using ktr::capi::TensorList;

namespace {

torchfort_result_t add_array(char const* call, torchfort_tensor_list_t list, ktr_array_t const& a) {
  if (list == nullptr) return refused(call, KTR_RESULT_INVALID_USAGE, "tensor_list: is a null pointer");
  try {
    static_cast<TensorList*>(list)->tensors.push_back(a);
  } catch (...) {
    return refused(call, KTR_RESULT_DEVICE_ERROR, "out of memory");
  }
  return TORCHFORT_RESULT_SUCCESS;
}

torchfort_result_t add_tensor(char const* call, torchfort_tensor_list_t list, void* data, std::size_t dim,
                              std::int64_t* shape, torchfort_datatype_t dtype, bool fortran) {
  ktr_datatype_t t{};
  if (!ktr_dtype(dtype, t))
    return refused(call, KTR_RESULT_INVALID_USAGE, "dtype " + std::to_string(int(dtype)) + " is not a datatype");
  if (data == nullptr || shape == nullptr)
    return refused(call, KTR_RESULT_INVALID_USAGE, "data_ptr or shape: is a null pointer");
  if (dim < 1 || dim > KTR_MAX_RANK)
    return refused(call, KTR_RESULT_INVALID_USAGE, "dim: " + std::to_string(dim) + " dimensions; 1 to 5");
  // Contiguous, row-major (C) or column-major (Fortran: dimensions reversed), checked by the API's one builder.
  std::int64_t extent[KTR_MAX_RANK] = {};
  for (std::size_t d = 0; d < dim; ++d) extent[d] = fortran ? shape[dim - 1 - d] : shape[d];
  ktr::capi::Array built;
  try {
    built = ktr::capi::array_of(data, t, std::int64_t(dim), extent, nullptr, "shape");
  } catch (ktr::Error const& e) {
    return refused(call, KTR_RESULT_INVALID_USAGE, e.what());
  }
  ktr_array_t a{};
  a.data = built.data, a.dtype = built.dtype, a.rank = built.rank;
  for (int d = 0; d < built.rank; ++d) a.extent[d] = built.extent[d], a.stride[d] = built.stride[d];
  return add_array(call, list, a);
}

// The one tensor of `list` (ktr's models take one input and give one output), or why not.
std::string one_tensor(torchfort_tensor_list_t list, char const* what, ktr_array_t const*& out) {
  auto const* l = static_cast<TensorList const*>(list);
  if (l == nullptr) return std::string(what) + ": is a null pointer";
  if (l->tensors.size() != 1)
    return std::string(what) + ": holds " + std::to_string(l->tensors.size()) +
           " tensors; ktr's models take one input and give one output";
  out = &l->tensors[0];
  return "";
}

}  // namespace

extern "C" {

torchfort_result_t torchfort_train_multiarg(char const* name, torchfort_tensor_list_t inputs,
                                            torchfort_tensor_list_t labels, float* loss_val,
                                            torchfort_tensor_list_t extra_loss_args, torchfort_stream_t stream) {
  char const* const call = "torchfort_train_multiarg";
  ktr_array_t const *x = nullptr, *y = nullptr;
  if (inputs == nullptr || labels == nullptr)
    return refused(call, KTR_RESULT_INVALID_USAGE, "inputs or labels: is a null pointer");
  std::string why = one_tensor(inputs, "inputs", x);
  if (why.empty()) why = one_tensor(labels, "labels", y);
  if (!why.empty()) return refused(call, KTR_RESULT_NOT_SUPPORTED, why);
  if (extra_loss_args != nullptr && !static_cast<TensorList*>(extra_loss_args)->tensors.empty())
    return refused(call, KTR_RESULT_NOT_SUPPORTED, "extra_loss_args: ktr's losses take no extra arguments");
  return reported(call, ktr_train_array(name, x, y, loss_val, (void*)stream));
}

torchfort_result_t torchfort_inference_multiarg(char const* name, torchfort_tensor_list_t inputs,
                                                torchfort_tensor_list_t outputs, torchfort_stream_t stream) {
  char const* const call = "torchfort_inference_multiarg";
  ktr_array_t const *x = nullptr, *out = nullptr;
  if (inputs == nullptr || outputs == nullptr)
    return refused(call, KTR_RESULT_INVALID_USAGE, "inputs or outputs: is a null pointer");
  std::string why = one_tensor(inputs, "inputs", x);
  if (why.empty()) why = one_tensor(outputs, "outputs", out);
  if (!why.empty()) return refused(call, KTR_RESULT_NOT_SUPPORTED, why);
  return reported(call, ktr_inference_array(name, x, out, (void*)stream));
}

torchfort_result_t torchfort_tensor_list_create(torchfort_tensor_list_t* tensor_list) {
  if (tensor_list == nullptr)
    return refused("torchfort_tensor_list_create", KTR_RESULT_INVALID_USAGE, "tensor_list: is a null pointer");
  *tensor_list = new (std::nothrow) TensorList();
  return *tensor_list != nullptr
             ? TORCHFORT_RESULT_SUCCESS
             : refused("torchfort_tensor_list_create", KTR_RESULT_DEVICE_ERROR, "out of memory");
}

torchfort_result_t torchfort_tensor_list_destroy(torchfort_tensor_list_t tensor_list) {
  delete static_cast<TensorList*>(tensor_list);
  return TORCHFORT_RESULT_SUCCESS;
}

torchfort_result_t torchfort_tensor_list_add_tensor(torchfort_tensor_list_t tensor_list, void* data_ptr,
                                                    size_t dim, int64_t* shape, torchfort_datatype_t dtype) {
  return add_tensor("torchfort_tensor_list_add_tensor", tensor_list, data_ptr, dim, shape, dtype, false);
}

torchfort_result_t torchfort_tensor_list_add_tensor_F(torchfort_tensor_list_t tensor_list, void* data_ptr,
                                                      size_t dim, int64_t* shape, torchfort_datatype_t dtype) {
  return add_tensor("torchfort_tensor_list_add_tensor", tensor_list, data_ptr, dim, shape, dtype, true);
}

// The Fortran module's: an array as its C descriptor described it (fortran.c), strides and all.
ktr_result_t ktr_tensor_list_add_array(void* tensor_list, ktr_array_t const* array) {
  if (array == nullptr)
    return ktr_result_t(refused("torchfort_tensor_list_add_tensor", KTR_RESULT_INVALID_USAGE, "array: is null"));
  return ktr_result_t(add_array("torchfort_tensor_list_add_tensor", tensor_list, *array));
}

}  // extern "C"
