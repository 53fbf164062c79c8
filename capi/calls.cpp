// The C API's steps, predictions and pushes on the caller's arrays (each on the model's instance of the caller's
// stream), and the C functions that build those arrays.
#include "api.hpp"
#include "guard.hpp"
#include "registry.hpp"

#include "../backends/region.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ktr::capi {

namespace {

// model.parameters.flatten_non_batch_dims: false (TorchFort): the MLP applies to the last dimension, every leading
// one a batch dimension, so (d0, ..., dk, F) is read as d0 x ... x dk points of F values ((F) is one point). The
// leading dimensions must collapse into one strided run (any C or Fortran array does; a section may not). Class
// labels, which have no feature dimension, collapse whole.
Array as_points(FileConfig const& cfg, Array a, char const* what) {
  if (!cfg.per_point || a.data == nullptr) return a;
  bool const labels = a.dtype == KTR_INT32 || a.dtype == KTR_INT64;
  int const lead = labels ? a.rank : a.rank - 1;  // the dimensions that become points
  if (lead == 0) {                                // one point
    a.rank = 2, a.extent[1] = a.extent[0], a.stride[1] = a.stride[0], a.extent[0] = 1;
    a.stride[0] = a.extent[1] * a.stride[1];
    return a;
  }
  std::int64_t points = 1;
  for (int d = 0; d < lead; ++d) {
    KTR_REQUIRE(d + 1 == lead || a.stride[d] == a.stride[d + 1] * a.extent[d + 1], what,
                "its leading dimensions do not collapse into one run of points (a section: pass a contiguous "
                "copy; flatten_non_batch_dims is false)");
    points *= a.extent[d];
  }
  Array p = a;
  p.rank = labels ? 1 : 2;
  p.extent[0] = points, p.stride[0] = a.stride[lead - 1];
  if (!labels) p.extent[1] = a.extent[a.rank - 1], p.stride[1] = a.stride[a.rank - 1];
  return p;
}

}  // namespace

ktr_result_t train(char const* name, Array const& x_in, Array const& y_in, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train");
    Entry& e = entry(name);
    Array const x = as_points(e.cfg, x_in, "input"), y = as_points(e.cfg, y_in, "label");
    ExecSpace const space = e.instances.of(stream);
    Trainer* t = &trainer_for(space, e, x, y, true);
    DeviceDataset const batch = batch_of(space, x, y, t->model(), int(t->target_width()));
    if (batch.count > t->model().max_batch() && e.cfg.general.batch_size == 0 && t->pending_calls() == 0) {
      // TorchFort takes any batch: without general.batch_size the run grows to the larger one, exactly as it was.
      e.trainer = t->with_batch(space, batch.count * e.comm.size() * e.cfg.run.accumulate);
      t = e.trainer.get();
    }
    t->enqueue_step(space, batch);
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      float const loss = t->last_loss(space);
      KTR_REQUIRE(std::isfinite(loss), "model '" + std::string(name) + "'",
                  "diverged: this step, or one taken since the last loss was read back, had a non-finite loss or "
                  "gradient, and its update was refused (the model is unchanged by it; " +
                      std::to_string(t->steps_taken()) + " steps taken)");
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
  });
}

ktr_result_t inference(char const* name, Array const& x_in, Array const& out_in, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::inference");
    Entry& e = entry(name);
    Array const x = as_points(e.cfg, x_in, "input"), out = as_points(e.cfg, out_in, "output");
    if (!e.trainer && e.torchfort)  // TorchFort infers with the model's initial weights
      e.trainer = Trainer::untrained(ExecSpace(), untrained_config(e, e.cfg.loss.mismatch(false).empty()),
                                     options_of(e.cfg, e.torchfort), e.comm);
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'",
                "has not been trained or loaded yet (ktr_train, ktr_push or ktr_load_checkpoint first)");
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = *e.trainer;
    DeviceDataset const features = features_of(space, x, t.model(), "input");
    // The model's output buffer, made by the first call of a size and kept (store_output waits for the values
    // before the call returns, so the next call may reuse it).
    std::size_t const n = std::size_t(features.count), w = std::size_t(t.model().output_width());
    if (e.outputs.extent(0) < n || e.outputs.extent(1) != w)
      e.outputs = decltype(e.outputs)(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::capi::output"),
                                      std::max(n, e.outputs.extent(0)), w);
    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> const values =
        Kokkos::subview(e.outputs, std::make_pair(std::size_t(0), n), Kokkos::ALL);
    t.predict(space, features, values);
    store_output(space, values, out, t.model().output_shape(1));
    ++e.inference_calls;
  });
}

ktr_result_t push(char const* name, Array const& x_in, Array const& y_in, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::push");
    Entry& e = entry(name);
    Array const x = as_points(e.cfg, x_in, "input"), y = as_points(e.cfg, y_in, "label");
    std::int64_t const capacity = e.cfg.general.buffer_size;
    if (capacity == 0)
      throw Error(e.cfg.path + ": general.buffer_size is not set: the model has no replay buffer to push to");
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = trainer_for(space, e, x, y, false);
    DeviceDataset const batch = batch_of(space, x, y, t.model(), int(t.target_width()));
    if (!e.buffer)  // made whole before it is kept: a failed allocation leaves no half-made buffer
      e.buffer = std::make_unique<ReplayBuffer>(space, capacity, t.model().input_shape(1), t.config().task,
                                                t.target_width());
    e.buffer->push(space, batch);
  });
}

ktr_result_t train_steps(char const* name, int k, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train_steps");
    Entry& e = entry(name);
    KTR_REQUIRE(k > 0, "k", std::to_string(k) + " is not a positive number of steps");
    KTR_REQUIRE(e.trainer != nullptr && e.buffer != nullptr && e.buffer->filled() > 0,
                "model '" + std::string(name) + "'", "has an empty replay buffer (ktr_push first)");
    Trainer& t = *e.trainer;
    std::int64_t const share = t.samples_per_update_here();  // this rank's part of general.batch_size
    KTR_REQUIRE(e.buffer->filled() >= share, "model '" + std::string(name) + "'",
                "the replay buffer holds " + std::to_string(e.buffer->filled()) + " samples, fewer than " +
                    (e.comm.size() > 1 ? "this rank's share of a batch (" : "a batch (") + std::to_string(share) +
                    ")");
    ExecSpace const space = e.instances.of(stream);
    t.set_data(e.buffer->data());
    // The Trainer's dispatches of K and, if asked for, its one read-back (divergence, the mean over the ranks:
    // every rank alike).
    t.enqueue_advance(space, k);
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      float const loss = float(t.last_advance_loss(space));
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
  });
}

}  // namespace ktr::capi

using namespace ktr;
using namespace ktr::capi;

namespace {

// A call's two arrays as its C function hands them over: checked and built (arrays.hpp's one builder), then `call`
// runs with them; a refused array answers for the call.
struct CArray {
  void* data;
  std::int64_t dim;
  std::int64_t const* shape;
  ktr_datatype_t dtype;
  char const* what;
};
template <class Call>
ktr_result_t with_arrays(CArray const& a, CArray const& b, Call&& call) {
  Array x, y;
  ktr_result_t const r = guarded([&] {
    x = c_array(a.data, a.dim, a.shape, a.dtype, a.what);
    y = c_array(b.data, b.dim, b.shape, b.dtype, b.what);
  });
  return r != KTR_RESULT_SUCCESS ? r : call(x, y);
}

// The same for a binding's two descriptions (the Fortran module's).
template <class Call>
ktr_result_t with_described(ktr_array_t const* a, char const* a_what, ktr_array_t const* b, char const* b_what,
                            Call&& call) {
  Array x, y;
  ktr_result_t const r = guarded([&] {
    x = described_array(a, a_what);
    y = described_array(b, b_what);
  });
  return r != KTR_RESULT_SUCCESS ? r : call(x, y);
}

}  // namespace

extern "C" {

ktr_result_t ktr_train(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                       ktr_datatype_t input_dtype, void* label, std::int64_t label_dim,
                       std::int64_t const* label_shape, ktr_datatype_t label_dtype, float* loss_val,
                       void* stream) {
  return with_arrays({input, input_dim, input_shape, input_dtype, "input"},
                     {label, label_dim, label_shape, label_dtype, "label"},
                     [&](Array const& x, Array const& y) { return train(name, x, y, loss_val, stream); });
}

ktr_result_t ktr_inference(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                           ktr_datatype_t input_dtype, void* output, std::int64_t output_dim,
                           std::int64_t const* output_shape, ktr_datatype_t output_dtype, void* stream) {
  return with_arrays({input, input_dim, input_shape, input_dtype, "input"},
                     {output, output_dim, output_shape, output_dtype, "output"},
                     [&](Array const& x, Array const& out) { return inference(name, x, out, stream); });
}

ktr_result_t ktr_push(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                      ktr_datatype_t input_dtype, void* label, std::int64_t label_dim,
                      std::int64_t const* label_shape, ktr_datatype_t label_dtype, void* stream) {
  return with_arrays({input, input_dim, input_shape, input_dtype, "input"},
                     {label, label_dim, label_shape, label_dtype, "label"},
                     [&](Array const& x, Array const& y) { return push(name, x, y, stream); });
}

ktr_result_t ktr_train_array(char const* name, ktr_array_t const* input, ktr_array_t const* label, float* loss_val,
                             void* stream) {
  return with_described(input, "input", label, "label",
                        [&](Array const& x, Array const& y) { return train(name, x, y, loss_val, stream); });
}

ktr_result_t ktr_inference_array(char const* name, ktr_array_t const* input, ktr_array_t const* output,
                                 void* stream) {
  return with_described(input, "input", output, "output",
                        [&](Array const& x, Array const& out) { return inference(name, x, out, stream); });
}

ktr_result_t ktr_push_array(char const* name, ktr_array_t const* input, ktr_array_t const* label, void* stream) {
  return with_described(input, "input", label, "label",
                        [&](Array const& x, Array const& y) { return push(name, x, y, stream); });
}

ktr_result_t ktr_train_steps(char const* name, int k, float* loss_val, void* stream) {
  return train_steps(name, k, loss_val, stream);
}

}  // extern "C"
