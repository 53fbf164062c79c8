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

/* TorchFort's off-policy calls from its Fortran generics (torchfort_rl.f90): the arrays' descriptors into the
 * _F calls' (pointer, rank, Fortran-ordered shape, datatype). The calls read contiguous arrays of one datatype; a
 * descriptor that is not one is refused here, printed as the calls print their failures. */
#include "torchfort/torchfort_rl.h"

int ktr_torchfort_rl_failed_F(const char* call, const char* message);

typedef struct {
  void* data;
  size_t rank;
  int64_t shape[KTR_MAX_RANK];
  torchfort_datatype_t dtype;
} rl_array;

static int rl_describe(const CFI_cdesc_t* d, const char* call, const char* what, rl_array* a) {
  char message[200];
  if (d == NULL || d->base_addr == NULL) {
    snprintf(message, sizeof message, "%s: is not allocated or not associated", what);
    return ktr_torchfort_rl_failed_F(call, message);
  }
  if (d->type != CFI_type_float && d->type != CFI_type_double) {
    snprintf(message, sizeof message, "%s: must be real(real32) or real(real64) (CFI type %d)", what,
             (int)d->type);
    return ktr_torchfort_rl_failed_F(call, message);
  }
  if (d->rank > KTR_MAX_RANK || !CFI_is_contiguous(d)) {
    snprintf(message, sizeof message, "%s: must be a contiguous array of rank 0 to %d", what, KTR_MAX_RANK);
    return ktr_torchfort_rl_failed_F(call, message);
  }
  a->data = d->base_addr;
  a->rank = d->rank == 0 ? 1 : (size_t)d->rank; /* a scalar is one value */
  a->shape[0] = 1;
  for (int i = 0; i < d->rank; ++i) a->shape[i] = (int64_t)d->dim[i].extent;
  a->dtype = d->type == CFI_type_float ? TORCHFORT_FLOAT : TORCHFORT_DOUBLE;
  return 0;
}

static int rl_same_type(const char* call, const rl_array* a, const rl_array* b) {
  return a->dtype == b->dtype
             ? 0
             : ktr_torchfort_rl_failed_F(call, "the arrays must share one kind, real(real32) or real(real64)");
}

int ktr_tf_rl_predict_F(const char* name, const CFI_cdesc_t* state, const CFI_cdesc_t* act, int explore,
                        int64_t stream) {
  const char* call = explore ? "torchfort_rl_off_policy_predict_explore" : "torchfort_rl_off_policy_predict";
  rl_array s, a;
  int r = rl_describe(state, call, "state", &s);
  if (r == 0) r = rl_describe(act, call, "act", &a);
  if (r == 0) r = rl_same_type(call, &s, &a);
  if (r != 0) return r;
  return (explore ? torchfort_rl_off_policy_predict_explore_F : torchfort_rl_off_policy_predict_F)(
      name, s.data, s.rank, s.shape, a.data, a.rank, a.shape, s.dtype, (torchfort_stream_t)(intptr_t)stream);
}

int ktr_tf_rl_evaluate_F(const char* name, const CFI_cdesc_t* state, const CFI_cdesc_t* act,
                         const CFI_cdesc_t* reward, int64_t stream) {
  const char* call = "torchfort_rl_off_policy_evaluate";
  rl_array s, a, q;
  int r = rl_describe(state, call, "state", &s);
  if (r == 0) r = rl_describe(act, call, "act", &a);
  if (r == 0) r = rl_describe(reward, call, "reward", &q);
  if (r == 0) r = rl_same_type(call, &s, &a);
  if (r == 0) r = rl_same_type(call, &s, &q);
  if (r != 0) return r;
  return torchfort_rl_off_policy_evaluate_F(name, s.data, s.rank, s.shape, a.data, a.rank, a.shape, q.data, q.rank,
                                            q.shape, s.dtype, (torchfort_stream_t)(intptr_t)stream);
}

int ktr_tf_rl_update_replay_F(const char* name, const CFI_cdesc_t* state_old, const CFI_cdesc_t* act_old,
                              const CFI_cdesc_t* state_new, const CFI_cdesc_t* reward, int final_state,
                              int64_t stream) {
  const char* call = "torchfort_rl_off_policy_update_replay_buffer";
  rl_array s, a, s2, rw;
  int r = rl_describe(state_old, call, "state_old", &s);
  if (r == 0) r = rl_describe(act_old, call, "act_old", &a);
  if (r == 0) r = rl_describe(state_new, call, "state_new", &s2);
  if (r == 0) r = rl_describe(reward, call, "reward", &rw);
  if (r == 0) r = rl_same_type(call, &s, &a);
  if (r == 0) r = rl_same_type(call, &s, &s2);
  if (r == 0) r = rl_same_type(call, &s, &rw);
  if (r != 0) return r;
  if (s.rank != s2.rank || s.shape[0] != s2.shape[0] || (s.rank == 2 && s.shape[1] != s2.shape[1]))
    return ktr_torchfort_rl_failed_F(call, "state_new: must have state_old's shape");
  return torchfort_rl_off_policy_update_replay_buffer_F(name, s.data, s2.data, s.rank, s.shape, a.data, a.rank,
                                                        a.shape, rw.data, final_state != 0, s.dtype,
                                                        (torchfort_stream_t)(intptr_t)stream);
}

int ktr_tf_rl_update_replay_multi_F(const char* name, const CFI_cdesc_t* state_old, const CFI_cdesc_t* act_old,
                                    const CFI_cdesc_t* state_new, const CFI_cdesc_t* reward,
                                    const CFI_cdesc_t* final_state, int64_t stream) {
  const char* call = "torchfort_rl_off_policy_update_replay_buffer";
  rl_array s, a, s2, rw, fs;
  int r = rl_describe(state_old, call, "state_old", &s);
  if (r == 0) r = rl_describe(act_old, call, "act_old", &a);
  if (r == 0) r = rl_describe(state_new, call, "state_new", &s2);
  if (r == 0) r = rl_describe(reward, call, "reward", &rw);
  if (r == 0) r = rl_describe(final_state, call, "final_state", &fs);
  if (r == 0) r = rl_same_type(call, &s, &a);
  if (r == 0) r = rl_same_type(call, &s, &s2);
  if (r == 0) r = rl_same_type(call, &s, &rw);
  if (r == 0) r = rl_same_type(call, &s, &fs);
  if (r != 0) return r;
  if (s.rank != s2.rank || s.shape[0] != s2.shape[0] || (s.rank == 2 && s.shape[1] != s2.shape[1]))
    return ktr_torchfort_rl_failed_F(call, "state_new: must have state_old's shape");
  return torchfort_rl_off_policy_update_replay_buffer_multi_F(
      name, s.data, s2.data, s.rank, s.shape, a.data, a.rank, a.shape, rw.data, rw.rank, rw.shape, fs.data,
      fs.rank, fs.shape, s.dtype, (torchfort_stream_t)(intptr_t)stream);
}

/* An optional argument: absent (NULL) is no array. */
static ktr_result_t describe_optional(const CFI_cdesc_t* d, const char* what, ktr_array_t* a,
                                      const ktr_array_t** out) {
  *out = NULL;
  if (d == NULL) return KTR_RESULT_SUCCESS;
  ktr_result_t const r = describe(d, what, a);
  if (r == KTR_RESULT_SUCCESS) *out = a;
  return r;
}

static int derivatives_F(const char* name, const char* spec, const CFI_cdesc_t* input, const CFI_cdesc_t* output,
                         const CFI_cdesc_t* derivs, int64_t stream, int training) {
  ktr_array_t x, out, d;
  const ktr_array_t* dp;
  ktr_result_t r = describe(input, "input", &x);
  if (r == KTR_RESULT_SUCCESS) r = describe(output, "output", &out);
  if (r == KTR_RESULT_SUCCESS) r = describe_optional(derivs, "derivs", &d, &dp);
  if (r != KTR_RESULT_SUCCESS) return r;
  return training ? ktr_jet_forward_array(name, spec, &x, &out, dp, (void*)(intptr_t)stream)
                  : ktr_derivatives_array(name, spec, &x, &out, dp, (void*)(intptr_t)stream);
}

int ktr_derivatives_F(const char* name, const char* spec, const CFI_cdesc_t* input, const CFI_cdesc_t* output,
                      const CFI_cdesc_t* derivs, int64_t stream) {
  return derivatives_F(name, spec, input, output, derivs, stream, 0);
}

int ktr_jet_forward_F(const char* name, const char* spec, const CFI_cdesc_t* input, const CFI_cdesc_t* output,
                      const CFI_cdesc_t* derivs, int64_t stream) {
  return derivatives_F(name, spec, input, output, derivs, stream, 1);
}

int ktr_vjp_F(const char* name, const CFI_cdesc_t* input, const CFI_cdesc_t* cotangent,
              const CFI_cdesc_t* input_grad, int64_t stream) {
  ktr_array_t x, c, g;
  ktr_result_t r = describe(input, "input", &x);
  if (r == KTR_RESULT_SUCCESS) r = describe(cotangent, "cotangent", &c);
  if (r == KTR_RESULT_SUCCESS) r = describe(input_grad, "input_grad", &g);
  return r != KTR_RESULT_SUCCESS ? r : ktr_vjp_array(name, &x, &c, &g, (void*)(intptr_t)stream);
}

int ktr_jet_backward_F(const char* name, const CFI_cdesc_t* output_seed, const CFI_cdesc_t* derivs_seed,
                       int64_t stream) {
  ktr_array_t u, d;
  const ktr_array_t *up, *dp;
  ktr_result_t r = describe_optional(output_seed, "output_seed", &u, &up);
  if (r == KTR_RESULT_SUCCESS) r = describe_optional(derivs_seed, "derivs_seed", &d, &dp);
  return r != KTR_RESULT_SUCCESS ? r : ktr_jet_backward_array(name, up, dp, (void*)(intptr_t)stream);
}

int ktr_rl_push_F(const char* name, const CFI_cdesc_t* state, const CFI_cdesc_t* action, const CFI_cdesc_t* reward,
                  const CFI_cdesc_t* next_state, const CFI_cdesc_t* done, int64_t stream) {
  ktr_array_t s, a, r, n, d;
  ktr_result_t e = describe(state, "state", &s);
  if (e == KTR_RESULT_SUCCESS) e = describe(action, "action", &a);
  if (e == KTR_RESULT_SUCCESS) e = describe(reward, "reward", &r);
  if (e == KTR_RESULT_SUCCESS) e = describe(next_state, "next_state", &n);
  if (e == KTR_RESULT_SUCCESS) e = describe(done, "done", &d);
  return e != KTR_RESULT_SUCCESS ? e : ktr_rl_push_array(name, &s, &a, &r, &n, &d, (void*)(intptr_t)stream);
}

int ktr_rl_predict_F(const char* name, const CFI_cdesc_t* state, const CFI_cdesc_t* action, int explore,
                     int64_t stream) {
  ktr_array_t s, a;
  ktr_result_t e = describe(state, "state", &s);
  if (e == KTR_RESULT_SUCCESS) e = describe(action, "action", &a);
  return e != KTR_RESULT_SUCCESS ? e : ktr_rl_predict_array(name, &s, &a, explore, (void*)(intptr_t)stream);
}

int ktr_rl_evaluate_F(const char* name, const CFI_cdesc_t* state, const CFI_cdesc_t* action, const CFI_cdesc_t* q,
                      int64_t stream) {
  ktr_array_t s, a, v;
  ktr_result_t e = describe(state, "state", &s);
  if (e == KTR_RESULT_SUCCESS) e = describe(action, "action", &a);
  if (e == KTR_RESULT_SUCCESS) e = describe(q, "q", &v);
  return e != KTR_RESULT_SUCCESS ? e : ktr_rl_evaluate_array(name, &s, &a, &v, (void*)(intptr_t)stream);
}
