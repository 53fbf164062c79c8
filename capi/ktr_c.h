/* ktr from C (C99): train a model on the caller's batches, in place where they live, configured by a YAML file.
 * Shaped like TorchFort's C API (torchfort_create_model, torchfort_train, ...), so that its users move over by
 * renaming; it runs wherever this ktr build runs (NVIDIA, AMD, CPU), without libtorch or Python.
 *
 *   ktr_create_model("surrogate", "surrogate.yaml", KTR_DEVICE_CPU);
 *   int64_t xs[2] = {batch, 4}, ys[2] = {batch, 1};
 *   float loss;
 *   ktr_train("surrogate", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, &loss, NULL);
 *   ktr_inference("surrogate", x, 2, xs, KTR_FLOAT, out, 2, ys, KTR_FLOAT, NULL);
 *
 * Arrays are C-ordered (row-major), the batch first. Every call returns a ktr_result_t; on failure
 * ktr_last_error() says why (the calling thread's last failure). No call aborts, exits or throws into the caller;
 * calls from several host threads are serialised (where ktr starts Kokkos, every call runs on a thread of ktr's
 * own; where the application did, a thread Kokkos cannot run on is refused by name). A step whose loss or
 * gradient is not finite is refused on the device and changes nothing; the next read-back reports it. */
#ifndef KTR_C_H
#define KTR_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums have int as their fixed underlying type, so that any value a C caller passes is a valid one
 * (the calls check it) and the two languages agree on the type's size. */
#ifdef __cplusplus
#define KTR_ENUM_INT : int
#else
#define KTR_ENUM_INT
#endif

typedef enum KTR_ENUM_INT {
  KTR_RESULT_SUCCESS = 0,
  KTR_RESULT_INVALID_USAGE = 1, /* a bad argument, name, shape, datatype or configuration */
  KTR_RESULT_NOT_SUPPORTED = 2, /* valid, but not in this build or this ktr (the message says which) */
  KTR_RESULT_INTERNAL_ERROR = 3,
  KTR_RESULT_DEVICE_ERROR = 4,
  KTR_RESULT_MPI_ERROR = 5
} ktr_result_t;

typedef enum KTR_ENUM_INT { KTR_FLOAT = 0, KTR_DOUBLE = 1, KTR_INT32 = 2, KTR_INT64 = 3 } ktr_datatype_t;

#define KTR_DEVICE_CPU (-1)
/* The build's own device: the host on host builds, the GPU Kokkos runs on (0 unless the application initialised
 * Kokkos on another) on GPU builds. Code that runs wherever ktr was built passes this. */
#define KTR_DEVICE_DEFAULT (-2)

/* The calling thread's last failure message ("" if none); valid until its next ktr call. */
const char* ktr_last_error(void);
/* The library version, e.g. "0.2.0". */
const char* ktr_version(void);

/* Creates the model `name` from the YAML file `config_file`. `device`: KTR_DEVICE_DEFAULT (-2), KTR_DEVICE_CPU
 * (-1) or a GPU index. A host-only build accepts -2, -1 and 0 (all the host); a GPU build accepts -2 and the index
 * of the GPU Kokkos uses (0 unless the application initialised Kokkos on another) and answers
 * KTR_RESULT_NOT_SUPPORTED for -1 and other GPUs (KTR_RESULT_INVALID_USAGE for other negative numbers). Kokkos is
 * initialised here if the application has not done it (and finalised by ktr_finalize() or at exit). */
ktr_result_t ktr_create_model(const char* name, const char* config_file, int device);

/* The same for data-parallel training over the ranks of an MPI communicator (an MPI build of ktr; others answer
 * KTR_RESULT_NOT_SUPPORTED): every rank creates the model and hands ktr_train its own batch; each update averages
 * the ranks' gradients, and every rank holds the same model. general.batch_size is the samples of an update over
 * all ranks (and accumulation steps), as ktr train's batch: each rank's batch, or its draw from its own replay
 * buffer, is batch_size / ranks; a batch_size that does not split so is refused here. `comm` in the _F form is a
 * Fortran communicator (MPI_Fint, what MPI_Comm_c2f returns). The MPI_Comm form is declared where <mpi.h> was
 * included first. */
ktr_result_t ktr_create_distributed_model_F(const char* name, const char* config_file, int comm, int device);
#if defined(MPI_VERSION)
ktr_result_t ktr_create_distributed_model(const char* name, const char* config_file, MPI_Comm comm, int device);
#endif

/* One optimiser step on the caller's batch: input (input_shape[0] samples of the model's input; KTR_FLOAT or
 * KTR_DOUBLE) and label (KTR_INT32 or KTR_INT64 class labels of shape (batch) or (batch, 1), or KTR_FLOAT /
 * KTR_DOUBLE regression targets of shape (batch, outputs)). Pointers may be host memory or memory of the build's
 * device; KTR_FLOAT inputs on the device are read in place. `stream`: the CUDA/HIP stream to work on, or NULL.
 * The model keeps its own Kokkos instance of each stream it is given until it is destroyed (or ktr_finalize()):
 * such a stream must outlive the model. Saves, loads and ktr_destroy_model wait for the model's streams first.
 * loss_val NULL: returns once the step is enqueued, with no read-back. */
ktr_result_t ktr_train(const char* name, void* input, int64_t input_dim, const int64_t* input_shape,
                       ktr_datatype_t input_dtype, void* label, int64_t label_dim, const int64_t* label_shape,
                       ktr_datatype_t label_dtype, float* loss_val, void* stream);

/* Predictions for every sample of `input` into `output` (batch, outputs), KTR_FLOAT or KTR_DOUBLE, in chunks of
 * the model's batch. */
ktr_result_t ktr_inference(const char* name, void* input, int64_t input_dim, const int64_t* input_shape,
                           ktr_datatype_t input_dtype, void* output, int64_t output_dim,
                           const int64_t* output_shape, ktr_datatype_t output_dtype, void* stream);

/* Appends the batch's samples to the model's replay buffer on the device (general.buffer_size samples; the
 * oldest are overwritten). Each rank of a distributed model has a buffer of its own: its shard of the data. */
ktr_result_t ktr_push(const char* name, void* input, int64_t input_dim, const int64_t* input_shape,
                      ktr_datatype_t input_dtype, void* label, int64_t label_dim, const int64_t* label_shape,
                      ktr_datatype_t label_dtype, void* stream);

/* k optimiser steps on batches of general.batch_size drawn on the device from the replay buffer (each rank's
 * share from its own), with one read-back (none if loss_val is NULL: the mean loss of the last step's dispatch
 * otherwise). */
ktr_result_t ktr_train_steps(const char* name, int k, float* loss_val, void* stream);

/* The model's weights as Flax-named safetensors (as `ktr export`), and back (as `ktr import`). */
ktr_result_t ktr_save_model(const char* name, const char* file);
ktr_result_t ktr_load_model(const char* name, const char* file);

/* A directory holding the whole run: parameters, optimiser state, schedule step, configuration and the replay
 * buffer, so that a loaded run continues bit for bit. step_train: optimiser steps taken; step_inference:
 * ktr_inference calls made. Either pointer may be NULL. A save writes only into a directory that is new, empty or
 * one of ktr's, and replaces the previous save all or nothing: it writes a new generation beside it and makes that
 * current by renaming its ktr-manifest (every file's size and CRC-32) into place, so a save that fails or is
 * killed leaves the previous checkpoint loadable. A load accepts only a directory whose files match its manifest,
 * of the model's architecture and buffer size, and changes nothing otherwise. */
ktr_result_t ktr_save_checkpoint(const char* name, const char* directory);
ktr_result_t ktr_load_checkpoint(const char* name, const char* directory, int64_t* step_train,
                                 int64_t* step_inference);

/* Input derivatives (jets) of a model of dense layers (docs/derivatives.md). `spec`: space-separated tokens, each
 * one column of `derivs`: d<i> (du/dx_i), d<i>,<j> (a second derivative; d1,0 is d0,1), lap (the Laplacian over
 * every input) or lap<i>,<j>,... (over the listed inputs); 0-based indices (C and Fortran alike: it is a string).
 * input (N, d); output u (N, m); derivs (N, m, T), T the number of tokens (T = 0: derivs NULL, dimension 0).
 * Derivatives are with respect to the raw inputs: the model's input transform is carried exactly. Second
 * derivatives and Laplacians are refused through relu, leaky_relu and elu; layers other than dense and flatten are
 * refused by name. The arithmetic is fp32 (KTR_DOUBLE arrays are converted). */
ktr_result_t ktr_derivatives(const char* name, const char* spec, void* input, int64_t input_dim,
                             const int64_t* input_shape, ktr_datatype_t input_dtype, void* output,
                             int64_t output_dim, const int64_t* output_shape, ktr_datatype_t output_dtype,
                             void* derivs, int64_t derivs_dim, const int64_t* derivs_shape,
                             ktr_datatype_t derivs_dtype, void* stream);

/* The input gradient of sum(cotangent * u): cotangent (N, m) in, input_grad (N, d) out. */
ktr_result_t ktr_vjp(const char* name, void* input, int64_t input_dim, const int64_t* input_shape,
                     ktr_datatype_t input_dtype, void* cotangent, int64_t cot_dim, const int64_t* cot_shape,
                     ktr_datatype_t cot_dtype, void* input_grad, int64_t ig_dim, const int64_t* ig_shape,
                     ktr_datatype_t ig_dtype, void* stream);

/* The split training step on a loss of the derivatives. ktr_jet_forward: as ktr_derivatives, keeping what its
 * backward needs (one pending forward per model: a new forward replaces it). A model that has seen no batch is
 * made by it, and a `normalize: standard` transform is fitted on its input then fixed. The caller computes its
 * loss and its gradient with respect to u and to each derivative column (the seeds, shaped as output and derivs;
 * NULL is zero). ktr_jet_backward consumes the forward and adds sum over points of seed . d/dtheta (no 1/N) to the
 * model's pending gradient; several point sets may each go forward then backward before one update.
 * ktr_apply_gradients: one optimiser update (schedule and clipping as configured; ranks' gradients averaged) from
 * the gradients added since the last, which it then clears; loss_for_log feeds report lines only. A backward
 * without its forward, seeds of other shapes, an update with no gradient, grad_accumulation_steps > 1 and bf16
 * runs are refused. */
ktr_result_t ktr_jet_forward(const char* name, const char* spec, void* input, int64_t input_dim,
                             const int64_t* input_shape, ktr_datatype_t input_dtype, void* output,
                             int64_t output_dim, const int64_t* output_shape, ktr_datatype_t output_dtype,
                             void* derivs, int64_t derivs_dim, const int64_t* derivs_shape,
                             ktr_datatype_t derivs_dtype, void* stream);
ktr_result_t ktr_jet_backward(const char* name, void* output_seed, int64_t os_dim, const int64_t* os_shape,
                              ktr_datatype_t os_dtype, void* derivs_seed, int64_t ds_dim, const int64_t* ds_shape,
                              ktr_datatype_t ds_dtype, void* stream);
ktr_result_t ktr_apply_gradients(const char* name, float loss_for_log, void* stream);

/* Reinforcement learning (docs/rl.md): off-policy systems (TD3, DDPG, SAC) configured by TorchFort's RL YAML
 * file, the same systems TorchFort's torchfort_rl_off_policy_* calls drive (a system made by either is driven by
 * both). Arrays are C-ordered rows (Fortran: (values, rows)), KTR_FLOAT or KTR_DOUBLE, host or device memory;
 * device floats are read and written in place on the system's instance of `stream`, and the call does not wait. */
/* `n_envs` > 0 replaces the file's replay_buffer.parameters.n_envs (ranks may differ); 0 keeps it. */
ktr_result_t ktr_rl_create_system(const char* name, const char* config_file, int64_t n_envs, int device);
/* The same over the ranks of an MPI communicator (an MPI build; others answer NOT_SUPPORTED): every rank's
 * networks start as rank 0's, each rank keeps its own buffer of its own n_envs and its normaliser statistics,
 * every update averages the gradients over the ranks and normalises by their merged statistics, losses are the
 * ranks' mean. */
ktr_result_t ktr_rl_create_distributed_system_F(const char* name, const char* config_file, int comm,
                                                int64_t n_envs, int device);
#if defined(MPI_VERSION)
ktr_result_t ktr_rl_create_distributed_system(const char* name, const char* config_file, MPI_Comm comm,
                                              int64_t n_envs, int device);
#endif
/* One time step of the system's n_envs environments: state and next_state (n_envs, S), action (n_envs, A), reward
 * and done (n_envs; done 0 or 1). A transition with a non-finite value is not stored; the next call that reads a
 * loss back fails naming how many were refused. */
ktr_result_t ktr_rl_push(const char* name, int64_t n_envs, const void* state, const void* action,
                         const void* reward, const void* next_state, const void* done, ktr_datatype_t dtype,
                         void* stream);
/* *ready = 1 once the buffer holds min_size transitions (and one n-step window). */
ktr_result_t ktr_rl_ready(const char* name, int* ready);
/* `updates` updates back to back, with no host synchronisation between them; policy_loss and critic_loss (each
 * may be NULL: then nothing is read back and the call does not wait) receive the last update's losses (the
 * policy's 0 when that update did not step the policy). */
ktr_result_t ktr_rl_train(const char* name, int64_t updates, float* policy_loss, float* critic_loss, void* stream);
/* action (n, A) for state (n, S): the policy's, clamped to [a_low, a_high]; explore != 0 adds the actor's noise.
 */
ktr_result_t ktr_rl_predict(const char* name, int64_t n, const void* state, void* action, int explore,
                            ktr_datatype_t dtype, void* stream);
/* q (n): the first critic's value of (state (n, S), action (n, A)). */
ktr_result_t ktr_rl_evaluate(const char* name, int64_t n, const void* state, const void* action, void* q,
                             ktr_datatype_t dtype, void* stream);
/* The whole system (networks, targets, optimisers, buffer, priorities, normalisers, counters) as one checkpoint
 * generation, and back into a system of the same file. A distributed system's are collective: rank 0 writes every
 * rank's state (rank-<r>.ckpt beside system.ckpt); each rank loads its own, from a save over as many ranks. */
ktr_result_t ktr_rl_save_checkpoint(const char* name, const char* directory);
ktr_result_t ktr_rl_load_checkpoint(const char* name, const char* directory);
ktr_result_t ktr_rl_destroy_system(const char* name);

ktr_result_t ktr_destroy_model(const char* name);
/* Destroys every model and, if ktr initialised Kokkos, finalises it. */
ktr_result_t ktr_finalize(void);

#ifdef __cplusplus
}
#endif

#endif /* KTR_C_H */
