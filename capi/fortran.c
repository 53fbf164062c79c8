/* The C half of ktr's Fortran module: Fortran 2018 C descriptors (ISO_Fortran_binding.h) of assumed-rank arrays
 * into ktr_array_t. Fortran is column-major and its last dimension is the sample: x(n_features, batch) is ktr's
 * (batch, n_features), so the dimensions are reversed and each keeps its own stride (an array section such as
 * x(:, 1:n:2) is read through its strides, never copied wrong). Compiled by the C compiler that goes with the
 * Fortran compiler (the descriptor layout is that compiler's). */
#include <ISO_Fortran_binding.h>

#include "ktr_array.h"

#include <stdio.h>

static ktr_result_t describe(const CFI_cdesc_t* d, const char* what, ktr_array_t* a) {
  char message[160];
  if (d == NULL || d->base_addr == NULL) {
    snprintf(message, sizeof message, "%s: is not allocated or not associated", what);
    return ktr_binding_error(message);
  }
  if (d->rank < 1 || d->rank > KTR_MAX_RANK) {
    snprintf(message, sizeof message, "%s: has rank %d; 1 to %d (the last dimension is the sample)", what,
             (int)d->rank, KTR_MAX_RANK);
    return ktr_binding_error(message);
  }
  switch (d->type) {
    case CFI_type_float:
      a->dtype = KTR_FLOAT;
      break;
    case CFI_type_double:
      a->dtype = KTR_DOUBLE;
      break;
    case CFI_type_int32_t:
      a->dtype = KTR_INT32;
      break;
    case CFI_type_int64_t:
      a->dtype = KTR_INT64;
      break;
    default:
      snprintf(message, sizeof message,
               "%s: must be real(real32), real(real64), integer(int32) or integer(int64) (CFI type %d)", what,
               (int)d->type);
      return ktr_binding_error(message);
  }
  a->data = d->base_addr;
  a->rank = (int)d->rank;
  for (int i = 0; i < a->rank; ++i) {
    const CFI_dim_t* dim = &d->dim[a->rank - 1 - i];
    if (dim->sm % (CFI_index_t)d->elem_len != 0) {
      snprintf(message, sizeof message, "%s: a stride of %ld bytes is not a whole number of elements", what,
               (long)dim->sm);
      return ktr_binding_error(message);
    }
    a->extent[i] = (int64_t)dim->extent;
    a->stride[i] = (int64_t)(dim->sm / (CFI_index_t)d->elem_len);
  }
  return KTR_RESULT_SUCCESS;
}

int ktr_train_F(const char* name, const CFI_cdesc_t* input, const CFI_cdesc_t* label, float* loss_val,
                int64_t stream) {
  ktr_array_t x, y;
  ktr_result_t r = describe(input, "input", &x);
  if (r == KTR_RESULT_SUCCESS) r = describe(label, "label", &y);
  return r != KTR_RESULT_SUCCESS ? r : ktr_train_array(name, &x, &y, loss_val, (void*)(intptr_t)stream);
}

int ktr_inference_F(const char* name, const CFI_cdesc_t* input, const CFI_cdesc_t* output, int64_t stream) {
  ktr_array_t x, out;
  ktr_result_t r = describe(input, "input", &x);
  if (r == KTR_RESULT_SUCCESS) r = describe(output, "output", &out);
  return r != KTR_RESULT_SUCCESS ? r : ktr_inference_array(name, &x, &out, (void*)(intptr_t)stream);
}

int ktr_push_F(const char* name, const CFI_cdesc_t* input, const CFI_cdesc_t* label, int64_t stream) {
  ktr_array_t x, y;
  ktr_result_t r = describe(input, "input", &x);
  if (r == KTR_RESULT_SUCCESS) r = describe(label, "label", &y);
  return r != KTR_RESULT_SUCCESS ? r : ktr_push_array(name, &x, &y, (void*)(intptr_t)stream);
}

int ktr_tensor_list_add_F(void* tensor_list, const CFI_cdesc_t* tensor) {
  ktr_array_t a;
  ktr_result_t r = describe(tensor, "tensor", &a);
  return r != KTR_RESULT_SUCCESS ? r : ktr_tensor_list_add_array(tensor_list, &a);
}
