// TorchFort's reinforcement-learning calls (torchfort/torchfort_rl.h): declared so that a program that uses them
// builds and links; each answers TORCHFORT_RESULT_NOT_SUPPORTED with its reason (printed as every failure of the
// TorchFort layer is) and touches none of its arguments.
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: the headers then declare the MPI_Comm forms
#endif

#include "torchfort/torchfort_rl.h"

#include "api.hpp"

#include <string>

namespace {

torchfort_result_t rl_refused(char const* call) {
  return torchfort_result_t(ktr::capi::torchfort_refused(
      call, KTR_RESULT_NOT_SUPPORTED,
      "ktr has no reinforcement learning yet (TorchFort's torchfort_rl_* systems: DDPG, TD3, SAC, PPO); its "
      "supervised calls (torchfort_create_model, torchfort_train, ...) work"));
}

}  // namespace

// One definition per call, its parameters as declared (a mismatch would not compile against the header).
#define KTR_TF_RL_REFUSE(fn, ...) \
  torchfort_result_t fn(__VA_ARGS__) { return rl_refused(#fn); }
#define KTR_TF_RL_REFUSE_FAMILY(family)                                                                          \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_create_system, const char*, const char*, int, int)                    \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_create_distributed_system_F, const char*, const char*, int, int, int) \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_train_step, const char*, float*, float*, torchfort_stream_t)          \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_explore, const char*, void*, size_t, int64_t*, void*, size_t, \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_explore_F, const char*, void*, size_t, int64_t*, void*,       \
                   size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                                   \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict, const char*, void*, size_t, int64_t*, void*, size_t,         \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_F, const char*, void*, size_t, int64_t*, void*, size_t,       \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_evaluate, const char*, void*, size_t, int64_t*, void*, size_t,        \
                   int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                  \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_evaluate_F, const char*, void*, size_t, int64_t*, void*, size_t,      \
                   int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                  \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_save_checkpoint, const char*, const char*)                            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_load_checkpoint, const char*, const char*)                            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_load_model, const char*, const char*)                                 \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_is_ready, const char*, bool&)                                         \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_int, const char*, const char*, int64_t, int)                \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_float, const char*, const char*, int64_t, float)            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_double, const char*, const char*, int64_t, double)
// The buffer's calls: the state and action arguments of the family (old and new states for a replay buffer).
#define KTR_TF_RL_REFUSE_BUFFER(family, buffer, ...)                                                              \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer, const char*, __VA_ARGS__, const void*, bool, \
                   torchfort_datatype_t, torchfort_stream_t)                                                      \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_F, const char*, __VA_ARGS__, const void*,     \
                   bool, torchfort_datatype_t, torchfort_stream_t)                                                \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_multi, const char*, __VA_ARGS__, void*,       \
                   size_t, int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_multi_F, const char*, __VA_ARGS__, void*,     \
                   size_t, int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)

extern "C" {

KTR_TF_RL_REFUSE_FAMILY(off_policy)
KTR_TF_RL_REFUSE_BUFFER(off_policy, replay, void*, void*, size_t, int64_t*, void*, size_t, int64_t*)
KTR_TF_RL_REFUSE_FAMILY(on_policy)
KTR_TF_RL_REFUSE_BUFFER(on_policy, rollout, void*, size_t, int64_t*, void*, size_t, int64_t*)
KTR_TF_RL_REFUSE(torchfort_rl_on_policy_reset_rollout_buffer, const char*)

#if defined(KTR_ENABLE_MPI)
KTR_TF_RL_REFUSE(torchfort_rl_off_policy_create_distributed_system, const char*, const char*, MPI_Comm, int, int)
KTR_TF_RL_REFUSE(torchfort_rl_on_policy_create_distributed_system, const char*, const char*, MPI_Comm, int, int)
#endif

// The Fortran module's RL procedures (torchfort.f90), which print and answer the same.
ktr_result_t ktr_torchfort_rl_refused_F(char const* call) { return ktr_result_t(rl_refused(call)); }

}  // extern "C"
