/* TorchFort's C interface (NVIDIA/TorchFort v0.4.0, supervised learning), implemented by ktr: a program written
 * against TorchFort builds unchanged against this header and libktr_c, and trains through ktr. Written by ktr to
 * TorchFort's published signatures, enum values and result codes; C99 and C++.
 *
 * What differs from TorchFort (ktr_c.h says more; docs/torchfort.md lists every key):
 *  - models are ktr's (`model: {type: mlp}` as TorchFort's, or `type: ktr` with a description); `torchscript`
 *    models are refused as not supported;
 *  - the one datatype of torchfort_train applies to the input, the label and *loss_val alike, as in TorchFort:
 *    TORCHFORT_FLOAT or TORCHFORT_DOUBLE arrays train a regression (or a classifier of integer labels given as
 *    TORCHFORT_INT32 / TORCHFORT_INT64 arrays through the tensor lists);
 *  - the *_multiarg calls take one input and one label or output tensor; more (or extra loss arguments) answer
 *    TORCHFORT_RESULT_NOT_SUPPORTED with a message;
 *  - torchfort_set_cudnn_benchmark is accepted and changes nothing (ktr has no cuDNN autotuner);
 *    torchfort_set_cuda_allow_tf32 selects ktr's tf32 matmuls for models created afterwards (CUDA builds);
 *    torchfort_set_manual_seed and torchfort_set_cuda_manual_seed set the next created model's seed;
 *    torchfort_wandb_log_* write TorchFort's metric lines to $TORCHFORT_LOGDIR/torchfort.log where the model's
 *    general.enable_wandb_hook is on (otherwise they are accepted and write nothing);
 *  - reinforcement learning (torchfort_rl_*, <torchfort_rl.h>, included here as TorchFort includes it) is declared
 *    and answers TORCHFORT_RESULT_NOT_SUPPORTED.
 * Every failure is printed to stderr ("TORCHFORT::ERROR: ..."), as TorchFort does, and returned as a result code;
 * nothing aborts, exits or throws into the caller. */
#ifndef KTR_TORCHFORT_H
#define KTR_TORCHFORT_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__cplusplus)
#include <stdbool.h>
#endif

#define TORCHFORT_MAJOR 0
#define TORCHFORT_MINOR 4
#define TORCHFORT_PATCH 0

#include "torchfort_enums.h"

/* A CUDA stream where the caller's program has the CUDA runtime's declarations, else a pointer (the same ABI),
 * which is also cudaStream_t there, as in TorchFort's CPU build. */
#if defined(CUDART_VERSION)
typedef cudaStream_t torchfort_stream_t;
#else
typedef void* cudaStream_t;
typedef void* torchfort_stream_t;
#endif

typedef void* torchfort_tensor_list_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Model creation. */
torchfort_result_t torchfort_create_model(const char* name, const char* config_fname, int device);
#if defined(MPI_VERSION)
torchfort_result_t torchfort_create_distributed_model(const char* name, const char* config_fname,
                                                      MPI_Comm mpi_comm, int device);
#endif
/* mpi_comm_f: a Fortran communicator (MPI_Fint, an int). */
torchfort_result_t torchfort_create_distributed_model_F(const char* name, const char* config_fname, int mpi_comm_f,
                                                        int device);

/* Training and inference: shapes row-major (C); the _F forms take Fortran's shapes (column-major, the last
 * dimension the sample) for the same memory. */
torchfort_result_t torchfort_train(const char* name, void* input, size_t input_dim, int64_t* input_shape,
                                   void* label, size_t label_dim, int64_t* label_shape, void* loss_val,
                                   torchfort_datatype_t dtype, torchfort_stream_t stream);
torchfort_result_t torchfort_train_F(const char* name, void* input, size_t input_dim, int64_t* input_shape,
                                     void* label, size_t label_dim, int64_t* label_shape, void* loss_val,
                                     torchfort_datatype_t dtype, torchfort_stream_t stream);
torchfort_result_t torchfort_train_multiarg(const char* name, torchfort_tensor_list_t inputs,
                                            torchfort_tensor_list_t labels, float* loss_val,
                                            torchfort_tensor_list_t extra_loss_args, torchfort_stream_t stream);
torchfort_result_t torchfort_inference(const char* name, void* input, size_t input_dim, int64_t* input_shape,
                                       void* output, size_t output_dim, int64_t* output_shape,
                                       torchfort_datatype_t dtype, torchfort_stream_t stream);
torchfort_result_t torchfort_inference_F(const char* name, void* input, size_t input_dim, int64_t* input_shape,
                                         void* output, size_t output_dim, int64_t* output_shape,
                                         torchfort_datatype_t dtype, torchfort_stream_t stream);
torchfort_result_t torchfort_inference_multiarg(const char* name, torchfort_tensor_list_t inputs,
                                                torchfort_tensor_list_t outputs, torchfort_stream_t stream);

/* Saving and loading: a model's weights (ktr's Flax-named safetensors), and a checkpoint directory of the whole
 * run. A model may load weights before it has trained (create, load, infer). */
torchfort_result_t torchfort_save_model(const char* name, const char* fname);
torchfort_result_t torchfort_load_model(const char* name, const char* fname);
torchfort_result_t torchfort_save_checkpoint(const char* name, const char* checkpoint_dir);
torchfort_result_t torchfort_load_checkpoint(const char* name, const char* checkpoint_dir, int64_t* step_train,
                                             int64_t* step_inference);

/* Settings. */
torchfort_result_t torchfort_set_cudnn_benchmark(const bool flag);
torchfort_result_t torchfort_set_cuda_allow_tf32(const bool flag);
torchfort_result_t torchfort_set_manual_seed(const int seed);
torchfort_result_t torchfort_set_cuda_manual_seed(const int seed);

/* Weights & Biases logging: TorchFort's metric log ($TORCHFORT_LOGDIR/torchfort.log, enable_wandb_hook). */
torchfort_result_t torchfort_wandb_log_int(const char* name, const char* metric_name, int64_t step, int value);
torchfort_result_t torchfort_wandb_log_float(const char* name, const char* metric_name, int64_t step, float value);
torchfort_result_t torchfort_wandb_log_double(const char* name, const char* metric_name, int64_t step,
                                              double value);

/* Tensor lists for the *_multiarg calls. */
torchfort_result_t torchfort_tensor_list_create(torchfort_tensor_list_t* tensor_list);
torchfort_result_t torchfort_tensor_list_destroy(torchfort_tensor_list_t tensor_list);
torchfort_result_t torchfort_tensor_list_add_tensor(torchfort_tensor_list_t tensor_list, void* data_ptr,
                                                    size_t dim, int64_t* shape, torchfort_datatype_t dtype);
torchfort_result_t torchfort_tensor_list_add_tensor_F(torchfort_tensor_list_t tensor_list, void* data_ptr,
                                                      size_t dim, int64_t* shape, torchfort_datatype_t dtype);

#ifdef __cplusplus
}
#endif

#include "torchfort_rl.h"

#endif /* KTR_TORCHFORT_H */
