// Evaluation and prediction over a device-resident dataset, in batches, metrics accumulated on the device.
#include "evaluate.hpp"

#include "../backends/region.hpp"
#include "../core/error.hpp"
#include "sobolev.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace ktr {

Evaluator::Evaluator(Model const& model, std::int64_t batch, InputTransform norm, Task task)
    : Evaluator(ExecSpace(), model, batch, std::move(norm), task) {}

Evaluator::Evaluator(ExecSpace const& space, Model const& model, std::int64_t batch, InputTransform norm,
                     Task task)
    : batch_(std::min(batch, model.max_batch())),
      norm_(norm),
      task_(task),
      x_(space, "ktr::eval::x", model.input_shape(batch_)),
      y_(Kokkos::view_alloc(space, "ktr::eval::y"), task == Task::classification ? std::size_t(batch_) : 0),
      values_(task == Task::regression ? Tensor(space, "ktr::eval::values", Shape{batch_, model.output_width()})
                                       : Tensor()),
      loss_(Kokkos::view_alloc(space, "ktr::eval::loss"), 2),
      correct_(Kokkos::view_alloc(space, "ktr::eval::correct"), 2),
      partials_(!device_is_host && task == Task::regression
                    ? DeviceView<double*>(Kokkos::view_alloc(space, "ktr::eval::loss_partials"),
                                          std::size_t(kLossPartials))
                    : DeviceView<double*>()) {}

void Evaluator::set_derivatives(ExecSpace const& space, Model const& model, std::string const& spec,
                                float weight) {
  KTR_REQUIRE(task_ == Task::regression, "derivatives", "Sobolev targets are float values; this model classifies");
  sobolev_ = std::make_shared<SobolevLoss>(space, model, spec, weight, batch_);
  values_ = Tensor(space, "ktr::eval::values", Shape{batch_, model.output_width() * sobolev_->columns()});
}

// Sobolev targets: the squared errors of values and derivatives summed over every batch (loss_[0] and loss_[1]).
EvalResult Evaluator::run_sobolev(ExecSpace const& space, Model& model, DeviceDataset const& data) {
  std::int64_t const width = model.output_width() * sobolev_->columns();
  KTR_REQUIRE(data.target_width() == width, "ktr::Evaluator",
              "the targets have " + std::to_string(data.target_width()) + " values per sample, derivatives '" +
                  sobolev_->spec().str() + "' need " + std::to_string(width));
  for (std::int64_t first = 0; first < data.count; first += batch_) {
    std::int64_t const b = std::min(batch_, data.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b)), values = values_.reshaped(Shape{b, width});
    gather_range(space, data, first, sobolev_->raw(), Batch{x, y_, values});
    sobolev_->pass(space, model, norm_, x, values, LossOutput{loss_, correct_, 0, true, Reduction::mean, {}}, {});
  }
  float sums[2] = {0, 0};
  Kokkos::deep_copy(space, Kokkos::View<float*, HostSpace, Kokkos::MemoryUnmanaged>(sums, 2), loss_);
  space.fence();
  double const values_count = double(data.count) * double(model.output_width());
  EvalResult r{0, std::numeric_limits<double>::quiet_NaN(), data.count, sums[0] / values_count};
  r.derivatives = true;
  r.derivative_mse = sums[1] / (values_count * double(sobolev_->spec().size()));
  r.loss = r.mse + double(sobolev_->weight()) * r.derivative_mse;
  return r;
}

EvalResult Evaluator::run(ExecSpace const& space, Model& model, DeviceDataset const& data) {
  Region const region("ktr::Evaluator::run");
  KTR_REQUIRE(data.task() == task_, "ktr::Evaluator", "the data's targets do not match the model's task");
  Kokkos::deep_copy(space, loss_, 0.0f);
  Kokkos::deep_copy(space, correct_, 0);
  if (sobolev_) return run_sobolev(space, model, data);
  for (std::int64_t first = 0; first < data.count; first += batch_) {
    std::int64_t const b = std::min(batch_, data.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b));
    Tensor const values = task_ == Task::regression ? values_.reshaped(Shape{b, model.output_width()}) : Tensor();
    gather_range(space, data, first, norm_, Batch{x, y_, values});
    Tensor const out = model.forward(space, Precision{precision_, {}}, x);
    LossOutput const sums{loss_, correct_, 0, true, Reduction::mean, partials_};
    if (task_ == Task::classification)
      softmax_cross_entropy(space, out, y_, Tensor(), sums);
    else
      mean_squared_error(space, out, values, Tensor(), sums);
    if (task_ == Task::regression && regression_.kind != RegressionLoss::Kind::mse)  // the run's loss, in slot 1
      regression_loss(space, regression_, out, values, Tensor(),
                      LossOutput{loss_, correct_, 1, true, Reduction::mean, partials_});
  }
  float sums[2] = {0, 0};
  std::int32_t hits = 0;
  // Read back on `space`, after its work; only that instance is waited for.
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::deep_copy(space, Kokkos::View<float*, HostSpace, Unmanaged>(sums, 2), loss_);
  Kokkos::deep_copy(space, Kokkos::View<std::int32_t, HostSpace, Unmanaged>(&hits), Kokkos::subview(correct_, 0));
  space.fence();
  if (task_ == Task::regression) {
    double const elements = double(data.count) * double(model.output_width());
    double const mse = sums[0] / elements;
    double const loss = regression_.kind == RegressionLoss::Kind::mse ? mse : sums[1] / elements;
    return EvalResult{loss, std::numeric_limits<double>::quiet_NaN(), data.count, mse};
  }
  return EvalResult{sums[0] / double(data.count), hits / double(data.count), data.count};
}

Predictor::Predictor(Model const& model, std::int64_t batch, InputTransform norm)
    : Predictor(ExecSpace(), model, batch, std::move(norm)) {}

Predictor::Predictor(ExecSpace const& space, Model const& model, std::int64_t batch, InputTransform norm)
    : batch_(std::min(batch, model.max_batch())),
      norm_(norm),
      x_(space, "ktr::predict::x", model.input_shape(batch_)) {}

void Predictor::run(ExecSpace const& space, Model& model, DeviceDataset const& inputs,
                    Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out) {
  Region const region("ktr::Predictor::run");
  std::int64_t const width = model.output_width();
  KTR_REQUIRE(std::int64_t(out.extent(0)) == inputs.count && std::int64_t(out.extent(1)) == width,
              "ktr::Predictor",
              "the output view must be (" + std::to_string(inputs.count) + ", " + std::to_string(width) + ")");
  for (std::int64_t first = 0; first < inputs.count; first += batch_) {
    std::int64_t const b = std::min(batch_, inputs.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b));
    gather_range(space, inputs, first, norm_, Batch{x, {}, Tensor()});
    float const* y = model.forward(space, Precision{precision_, {}}, x).data();  // (b, width)
    Kokkos::parallel_for(
        "ktr::predict::store", MDRange<2>(space, {0, 0}, {b, width}),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) { out(first + i, j) = y[i * width + j]; });
  }
}

}  // namespace ktr
