/* TorchFort's reinforcement-learning interface (NVIDIA/TorchFort v0.4.0 and master's load_model calls),
 * declared by ktr. The off-policy systems of TD3, DDPG and SAC work from C and C++ (create_system,
 * update_replay_buffer(_multi), is_ready, train_step, predict, predict_explore, evaluate and their _F forms,
 * save_checkpoint, load_checkpoint, load_model), over MPI ranks too (create_distributed_system where ktr is
 * built with MPI; a distributed system's checkpoints are collective); every other torchfort_rl_* call (PPO and
 * the on-policy calls, the metric log) answers TORCHFORT_RESULT_NOT_SUPPORTED, printing why to stderr (KTR_QUIET=1
 * silences it) and touching none of its arguments. Written by ktr to TorchFort's published signatures; C99 and
 * C++ (torchfort_rl_*_is_ready takes `bool&` in C++, as TorchFort's, and `bool*` in C: the same ABI). Included
 * by <torchfort.h>, as TorchFort's is. */
#ifndef KTR_TORCHFORT_RL_H
#define KTR_TORCHFORT_RL_H

#include "torchfort.h"

#ifdef __cplusplus
#define KTR_TF_BOOL_OUT bool&
extern "C" {
#else
#define KTR_TF_BOOL_OUT bool*
#endif

/* The calls of one policy family: off_policy (DDPG, TD3, SAC: a replay buffer) and on_policy (PPO: a rollout
 * buffer) share every signature but the buffer's. */
#define KTR_TF_RL_COMMON(family)                                                                                 \
  torchfort_result_t torchfort_rl_##family##_create_system(const char* name, const char* config_fname,           \
                                                           int model_device, int rb_device);                     \
  torchfort_result_t torchfort_rl_##family##_create_distributed_system_F(                                        \
      const char* name, const char* config_fname, int mpi_comm_f, int model_device, int rb_device);              \
  torchfort_result_t torchfort_rl_##family##_train_step(const char* name, float* p_loss_val, float* q_loss_val,  \
                                                        torchfort_stream_t stream);                              \
  torchfort_result_t torchfort_rl_##family##_predict_explore(                                                    \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, torchfort_datatype_t dtype, torchfort_stream_t stream);                             \
  torchfort_result_t torchfort_rl_##family##_predict_explore_F(                                                  \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, torchfort_datatype_t dtype, torchfort_stream_t stream);                             \
  torchfort_result_t torchfort_rl_##family##_predict(                                                            \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, torchfort_datatype_t dtype, torchfort_stream_t stream);                             \
  torchfort_result_t torchfort_rl_##family##_predict_F(                                                          \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, torchfort_datatype_t dtype, torchfort_stream_t stream);                             \
  torchfort_result_t torchfort_rl_##family##_evaluate(                                                           \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, void* reward, size_t reward_dim, int64_t* reward_shape, torchfort_datatype_t dtype, \
      torchfort_stream_t stream);                                                                                \
  torchfort_result_t torchfort_rl_##family##_evaluate_F(                                                         \
      const char* name, void* state, size_t state_dim, int64_t* state_shape, void* action, size_t action_dim,    \
      int64_t* action_shape, void* reward, size_t reward_dim, int64_t* reward_shape, torchfort_datatype_t dtype, \
      torchfort_stream_t stream);                                                                                \
  torchfort_result_t torchfort_rl_##family##_save_checkpoint(const char* name, const char* checkpoint_dir);      \
  torchfort_result_t torchfort_rl_##family##_load_checkpoint(const char* name, const char* checkpoint_dir);      \
  torchfort_result_t torchfort_rl_##family##_load_model(const char* name, const char* checkpoint_dir);           \
  torchfort_result_t torchfort_rl_##family##_is_ready(const char* name, KTR_TF_BOOL_OUT ready);                  \
  torchfort_result_t torchfort_rl_##family##_wandb_log_int(const char* name, const char* metric_name,            \
                                                           int64_t step, int value);                             \
  torchfort_result_t torchfort_rl_##family##_wandb_log_float(const char* name, const char* metric_name,          \
                                                             int64_t step, float value);                         \
  torchfort_result_t torchfort_rl_##family##_wandb_log_double(const char* name, const char* metric_name,         \
                                                              int64_t step, double value);

/* The buffer calls: `buffer` is replay (off_policy) or rollout (on_policy). */
#define KTR_TF_RL_BUFFER(family, buffer, ...)                                                                     \
  torchfort_result_t torchfort_rl_##family##_update_##buffer##_buffer(                                            \
      const char* name, __VA_ARGS__, const void* reward, bool final_state, torchfort_datatype_t dtype,            \
      torchfort_stream_t stream);                                                                                 \
  torchfort_result_t torchfort_rl_##family##_update_##buffer##_buffer_F(                                          \
      const char* name, __VA_ARGS__, const void* reward, bool final_state, torchfort_datatype_t dtype,            \
      torchfort_stream_t stream);                                                                                 \
  torchfort_result_t torchfort_rl_##family##_update_##buffer##_buffer_multi(                                      \
      const char* name, __VA_ARGS__, void* reward, size_t reward_dim, int64_t* reward_shape, void* final_state,   \
      size_t final_state_dim, int64_t* final_state_shape, torchfort_datatype_t dtype, torchfort_stream_t stream); \
  torchfort_result_t torchfort_rl_##family##_update_##buffer##_buffer_multi_F(                                    \
      const char* name, __VA_ARGS__, void* reward, size_t reward_dim, int64_t* reward_shape, void* final_state,   \
      size_t final_state_dim, int64_t* final_state_shape, torchfort_datatype_t dtype, torchfort_stream_t stream);

KTR_TF_RL_COMMON(off_policy)
KTR_TF_RL_BUFFER(off_policy, replay, void* state_old, void* state_new, size_t state_dim, int64_t* state_shape,
                 void* action_old, size_t action_dim, int64_t* action_shape)
KTR_TF_RL_COMMON(on_policy)
KTR_TF_RL_BUFFER(on_policy, rollout, void* state, size_t state_dim, int64_t* state_shape, void* action,
                 size_t action_dim, int64_t* action_shape)
torchfort_result_t torchfort_rl_on_policy_reset_rollout_buffer(const char* name);

#if defined(MPI_VERSION)
torchfort_result_t torchfort_rl_off_policy_create_distributed_system(const char* name, const char* config_fname,
                                                                     MPI_Comm mpi_comm, int model_device,
                                                                     int rb_device);
torchfort_result_t torchfort_rl_on_policy_create_distributed_system(const char* name, const char* config_fname,
                                                                    MPI_Comm mpi_comm, int model_device,
                                                                    int rb_device);
#endif

#ifdef __cplusplus
}
#endif

#endif /* KTR_TORCHFORT_RL_H */
