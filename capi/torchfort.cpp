// TorchFort's C interface (torchfort/torchfort.h) over ktr's: each call translates its arguments (one datatype
// for every array, Fortran-ordered shapes in the _F forms, tensor lists) and calls ktr's C API; a failure is
// printed to stderr, as TorchFort prints it, and returned as TorchFort's result code (the values are ktr's).
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: torchfort.h then declares torchfort_create_distributed_model(..., MPI_Comm, ...)
#endif

#include "torchfort/torchfort.h"

#include "../core/types.hpp"
#include "metric_log.hpp"
#include "torchfort_door.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ktr::capi::ktr_dtype;
using ktr::capi::refused;
using ktr::capi::reported;

// A shape as ktr reads it (row-major, batch first): Fortran's reversed. At most 8 dimensions are read (none of a
// larger rank, which ktr refuses by name, more than 5).
struct Shape {
  std::int64_t dims[8] = {};
  std::int64_t rank = 0;
  std::int64_t const* data(std::int64_t const* given) const { return given == nullptr ? nullptr : dims; }
};
Shape reversed(std::int64_t const* shape, std::size_t dim) {
  Shape s;
  s.rank = std::int64_t(dim);
  if (shape != nullptr && dim <= 8)  // more: ktr refuses the rank by name before reading a dimension
    for (std::size_t i = 0; i < dim; ++i) s.dims[i] = shape[dim - 1 - i];
  return s;
}

torchfort_result_t train(char const* call, char const* name, void* input, std::size_t input_dim,
                         std::int64_t* input_shape, void* label, std::size_t label_dim, std::int64_t* label_shape,
                         void* loss_val, torchfort_datatype_t dtype, void* stream, bool fortran) {
  ktr_datatype_t t{};
  if (!ktr_dtype(dtype, t))
    return refused(call, KTR_RESULT_INVALID_USAGE, "dtype " + std::to_string(int(dtype)) + " is not a datatype");
  if (t != KTR_FLOAT && t != KTR_DOUBLE)
    return refused(call, KTR_RESULT_NOT_SUPPORTED,
                   "dtype: the input, the label and loss_val share it, and ktr's inputs are TORCHFORT_FLOAT or "
                   "TORCHFORT_DOUBLE (integer class labels: torchfort_train_multiarg with tensor lists)");
  Shape const xs = fortran ? reversed(input_shape, input_dim) : Shape{};
  Shape const ys = fortran ? reversed(label_shape, label_dim) : Shape{};
  float loss = 0;
  ktr_result_t const r =
      ktr_train(name, input, std::int64_t(input_dim), fortran ? xs.data(input_shape) : input_shape, t, label,
                std::int64_t(label_dim), fortran ? ys.data(label_shape) : label_shape, t,
                loss_val != nullptr ? &loss : nullptr, stream);
  if (r == KTR_RESULT_SUCCESS && loss_val != nullptr) {
    if (t == KTR_DOUBLE)
      *static_cast<double*>(loss_val) = double(loss);
    else
      *static_cast<float*>(loss_val) = loss;
  }
  return reported(call, r);
}

torchfort_result_t inference(char const* call, char const* name, void* input, std::size_t input_dim,
                             std::int64_t* input_shape, void* output, std::size_t output_dim,
                             std::int64_t* output_shape, torchfort_datatype_t dtype, void* stream, bool fortran) {
  ktr_datatype_t t{};
  if (!ktr_dtype(dtype, t))
    return refused(call, KTR_RESULT_INVALID_USAGE, "dtype " + std::to_string(int(dtype)) + " is not a datatype");
  Shape const xs = fortran ? reversed(input_shape, input_dim) : Shape{};
  Shape const os = fortran ? reversed(output_shape, output_dim) : Shape{};
  return reported(
      call,
      ktr_inference(name, input, std::int64_t(input_dim), fortran ? xs.data(input_shape) : input_shape, t, output,
                    std::int64_t(output_dim), fortran ? os.data(output_shape) : output_shape, t, stream));
}

// Settings for the models created from here on (TorchFort's process-wide switches).
bool g_tf32 = false;

// TorchFort programs (and TorchFort's own tests) pass TORCHFORT_DEVICE_CPU for "no GPU needed": a GPU build runs
// the model on its GPU, and says so once per model.
int device_for(char const* name, int device) {
  if (device != TORCHFORT_DEVICE_CPU || ktr::device_is_host) return device;
  if (!ktr::capi::torchfort_quiet())
    std::fprintf(
        stderr,
        "TORCHFORT::WARN: model %s: TORCHFORT_DEVICE_CPU asked for, but this build of ktr runs on the GPU "
        "(%s): the model runs there\n",
        name != nullptr ? name : "(null)", ktr::ExecSpace::name());
  return KTR_DEVICE_DEFAULT;
}

}  // namespace

extern "C" {

torchfort_result_t torchfort_create_model(char const* name, char const* config_fname, int device) {
  return reported("torchfort_create_model",
                  ktr::capi::create_model_as_torchfort(name, config_fname, device_for(name, device), g_tf32));
}

#if defined(KTR_ENABLE_MPI)
torchfort_result_t torchfort_create_distributed_model(char const* name, char const* config_fname,
                                                      MPI_Comm mpi_comm, int device) {
  return torchfort_create_distributed_model_F(name, config_fname, int(MPI_Comm_c2f(mpi_comm)), device);
}
#endif

torchfort_result_t torchfort_create_distributed_model_F(char const* name, char const* config_fname, int mpi_comm_f,
                                                        int device) {
  return reported("torchfort_create_distributed_model",
                  ktr::capi::create_distributed_model_as_torchfort(name, config_fname, mpi_comm_f,
                                                                   device_for(name, device), g_tf32));
}

torchfort_result_t torchfort_train(char const* name, void* input, size_t input_dim, int64_t* input_shape,
                                   void* label, size_t label_dim, int64_t* label_shape, void* loss_val,
                                   torchfort_datatype_t dtype, torchfort_stream_t stream) {
  return train("torchfort_train", name, input, input_dim, input_shape, label, label_dim, label_shape, loss_val,
               dtype, (void*)stream, false);
}

torchfort_result_t torchfort_train_F(char const* name, void* input, size_t input_dim, int64_t* input_shape,
                                     void* label, size_t label_dim, int64_t* label_shape, void* loss_val,
                                     torchfort_datatype_t dtype, torchfort_stream_t stream) {
  return train("torchfort_train", name, input, input_dim, input_shape, label, label_dim, label_shape, loss_val,
               dtype, (void*)stream, true);
}

torchfort_result_t torchfort_inference(char const* name, void* input, size_t input_dim, int64_t* input_shape,
                                       void* output, size_t output_dim, int64_t* output_shape,
                                       torchfort_datatype_t dtype, torchfort_stream_t stream) {
  return inference("torchfort_inference", name, input, input_dim, input_shape, output, output_dim, output_shape,
                   dtype, (void*)stream, false);
}

torchfort_result_t torchfort_inference_F(char const* name, void* input, size_t input_dim, int64_t* input_shape,
                                         void* output, size_t output_dim, int64_t* output_shape,
                                         torchfort_datatype_t dtype, torchfort_stream_t stream) {
  return inference("torchfort_inference", name, input, input_dim, input_shape, output, output_dim, output_shape,
                   dtype, (void*)stream, true);
}

torchfort_result_t torchfort_save_model(char const* name, char const* fname) {
  return reported("torchfort_save_model", ktr_save_model(name, fname));
}

torchfort_result_t torchfort_load_model(char const* name, char const* fname) {
  return reported("torchfort_load_model", ktr_load_model(name, fname));
}

torchfort_result_t torchfort_save_checkpoint(char const* name, char const* checkpoint_dir) {
  return reported("torchfort_save_checkpoint", ktr_save_checkpoint(name, checkpoint_dir));
}

torchfort_result_t torchfort_load_checkpoint(char const* name, char const* checkpoint_dir, int64_t* step_train,
                                             int64_t* step_inference) {
  return reported("torchfort_load_checkpoint",
                  ktr_load_checkpoint(name, checkpoint_dir, step_train, step_inference));
}

torchfort_result_t torchfort_set_cudnn_benchmark(const bool) { return TORCHFORT_RESULT_SUCCESS; }

torchfort_result_t torchfort_set_cuda_allow_tf32(const bool flag) {
  g_tf32 = flag;  // used where the build can (ktr_create_model's device decides)
  return TORCHFORT_RESULT_SUCCESS;
}

torchfort_result_t torchfort_set_manual_seed(const int seed) {
  return reported("torchfort_set_manual_seed", ktr::capi::set_next_seed(seed));
}

torchfort_result_t torchfort_set_cuda_manual_seed(const int seed) {
  return reported("torchfort_set_cuda_manual_seed", ktr::capi::set_next_seed(seed));
}

torchfort_result_t torchfort_wandb_log_int(char const* name, char const* metric_name, int64_t step, int value) {
  return reported("torchfort_wandb_log",
                  ktr::capi::log_metric(name, metric_name, step, ktr::capi::metric_text(value)));
}
torchfort_result_t torchfort_wandb_log_float(char const* name, char const* metric_name, int64_t step,
                                             float value) {
  return reported("torchfort_wandb_log",
                  ktr::capi::log_metric(name, metric_name, step, ktr::capi::metric_text(value)));
}
torchfort_result_t torchfort_wandb_log_double(char const* name, char const* metric_name, int64_t step,
                                              double value) {
  return reported("torchfort_wandb_log",
                  ktr::capi::log_metric(name, metric_name, step, ktr::capi::metric_text(value)));
}

}  // extern "C"

namespace ktr::capi {

bool torchfort_quiet() {
  char const* q = std::getenv("KTR_QUIET");
  return q != nullptr && std::strcmp(q, "1") == 0;
}

ktr_result_t torchfort_reported(char const* call, ktr_result_t r) {
  if (r != KTR_RESULT_SUCCESS && !torchfort_quiet())
    std::fprintf(stderr, "TORCHFORT::ERROR: %s: %s\n", call, ktr_last_error());
  return r;
}

ktr_result_t torchfort_refused(char const* call, ktr_result_t r, std::string const& message) {
  set_last_error(message);
  return torchfort_reported(call, r);
}

bool ktr_dtype(torchfort_datatype_t t, ktr_datatype_t& out) {
  switch (t) {
    case TORCHFORT_FLOAT:
      out = KTR_FLOAT;
      return true;
    case TORCHFORT_DOUBLE:
      out = KTR_DOUBLE;
      return true;
    case TORCHFORT_INT32:
      out = KTR_INT32;
      return true;
    case TORCHFORT_INT64:
      out = KTR_INT64;
      return true;
  }
  return false;
}

}  // namespace ktr::capi
