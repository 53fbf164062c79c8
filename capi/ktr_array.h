/* Internal to ktr's language bindings (not installed): an array described by pointer, datatype, extents and
 * strides in elements, batch first, and the C API's entry points on such descriptions. The Fortran binding
 * (fortran.c) builds them from the Fortran 2018 C descriptors of assumed-rank arrays, so array sections are read
 * through their strides. */
#ifndef KTR_ARRAY_H
#define KTR_ARRAY_H

#include "ktr_c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KTR_MAX_RANK 5

typedef struct {
  void* data;
  int dtype; /* ktr_datatype_t */
  int rank;
  int64_t extent[KTR_MAX_RANK];
  int64_t stride[KTR_MAX_RANK]; /* elements */
} ktr_array_t;

ktr_result_t ktr_train_array(const char* name, const ktr_array_t* input, const ktr_array_t* label, float* loss_val,
                             void* stream);
ktr_result_t ktr_inference_array(const char* name, const ktr_array_t* input, const ktr_array_t* output,
                                 void* stream);
ktr_result_t ktr_push_array(const char* name, const ktr_array_t* input, const ktr_array_t* label, void* stream);
/* Input derivatives (ktr_c.h's calls); a NULL description is an absent array (no derivs, a zero seed). */
ktr_result_t ktr_derivatives_array(const char* name, const char* spec, const ktr_array_t* input,
                                   const ktr_array_t* output, const ktr_array_t* derivs, void* stream);
ktr_result_t ktr_jet_forward_array(const char* name, const char* spec, const ktr_array_t* input,
                                   const ktr_array_t* output, const ktr_array_t* derivs, void* stream);
ktr_result_t ktr_vjp_array(const char* name, const ktr_array_t* input, const ktr_array_t* cotangent,
                           const ktr_array_t* input_grad, void* stream);
ktr_result_t ktr_jet_backward_array(const char* name, const ktr_array_t* output_seed,
                                    const ktr_array_t* derivs_seed, void* stream);
/* Reinforcement learning (ktr_c.h's ktr_rl_* calls): arrays of rank 1 or 2, (rows, values) after reversal. */
ktr_result_t ktr_rl_push_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                               const ktr_array_t* reward, const ktr_array_t* next_state, const ktr_array_t* done,
                               void* stream);
ktr_result_t ktr_rl_predict_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                                  int explore, void* stream);
ktr_result_t ktr_rl_evaluate_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                                   const ktr_array_t* q, void* stream);
/* A failure found by the binding itself (an unsupported Fortran type or rank): recorded as ktr_last_error(). */
ktr_result_t ktr_binding_error(const char* message);
/* TorchFort's tensor lists (torchfort_tensor_list_t) take a described array too (the Fortran module's). */
ktr_result_t ktr_tensor_list_add_array(void* tensor_list, const ktr_array_t* array);

#ifdef __cplusplus
}
#endif

#endif /* KTR_ARRAY_H */
