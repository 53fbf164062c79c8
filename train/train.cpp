// The K-step training program, its dispatch (captured or plain), metric read-back and evaluation.
#include "train.hpp"

#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "../core/loss.hpp"

#include <tuple>

namespace ktr {

namespace {
std::uintptr_t address(void const* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

ProgramKey::ProgramKey(Model const& m, DeviceDataset const& data, int k_)
    : model(address(&m)),
      params(address(m.arena().params().data())),
      grads(address(m.arena().grads().data())),
      images(address(data.images.data())),
      labels(address(data.labels.data())),
      count(data.count),
      k(k_),
      precision(int(matmul_precision())) {}

bool ProgramKey::operator<(ProgramKey const& o) const {
  return std::tie(model, params, grads, images, labels, count, k, precision) <
         std::tie(o.model, o.params, o.grads, o.images, o.labels, o.count, o.k, o.precision);
}

TrainState::TrainState(Model const& model, OptimizerConfig const& opt, std::int64_t batch_, std::uint64_t seed_,
                       Normalization norm_, int max_k_)
    : optimizer(opt, model.arena().size()),
      step("ktr::train::step"),
      batch(batch_),
      seed(seed_),
      norm(norm_),
      max_k(max_k_),
      x("ktr::train::x", model.input_shape(batch_)),
      y("ktr::train::y", std::size_t(batch_)),
      loss("ktr::train::loss", std::size_t(max_k_)),
      correct("ktr::train::correct", std::size_t(max_k_)) {
  KTR_REQUIRE(batch_ > 0 && batch_ <= model.max_batch(), "--batch",
              "must be in [1, " + std::to_string(model.max_batch()) + "]");
  KTR_REQUIRE(max_k_ > 0, "--steps-per-dispatch", "must be positive");
}

void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k) {
  KTR_REQUIRE(k > 0 && k <= state.max_k, "ktr::train_steps", "K must be in [1, max_k]");
  BatchCursor const cursor{state.step, 0, state.seed, state.batch};
  auto const& arena = model.arena();
  for (int i = 0; i < k; ++i) {
    gather_batch(space, data, cursor, state.norm, state.x, state.y);  // x (B, H, W, C), y (B)
    Tensor const logits = model.forward(space, state.x);              // (B, classes)
    softmax_cross_entropy(space, logits, state.y, model.dlogits(),
                          LossOutput{state.loss, state.correct, i, false});
    model.backward(space);
    state.optimizer.update(space, arena.params(), arena.grads(), state.step);  // step += 1 on the device
  }
}

char const* dispatch_path_name(DispatchPath path) {
  switch (path) {
    case DispatchPath::plain:
      return "plain";
    case DispatchPath::captured:
      return "captured";
    case DispatchPath::replayed:
      return "replayed";
    case DispatchPath::capture_failed:
      return "capture failed";
  }
  return "?";
}

DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k) {
  auto run_plain = [&] { train_steps(space, state, model, data, k); };
  DispatchPath path = DispatchPath::plain;
  if (!CapturedProgram::can_capture(space)) {
    run_plain();
  } else {
    auto& program = state.programs[ProgramKey(model, data, k)];
    if (program && program->valid()) {
      program->replay(space);
      path = DispatchPath::replayed;
    } else if (!program) {
      // First dispatch of this key: run it plainly (warming up every lazily created buffer and handle), then
      // record it; the next dispatch of this key replays it.
      run_plain();
      program = std::make_unique<CapturedProgram>();
      space.fence();  // not captured: the capture must start on an idle stream
      if (program->capture(space, run_plain)) {
        path = DispatchPath::captured;
      } else {
        state.capture_error = program->error();
        path = DispatchPath::capture_failed;
      }
    } else {
      run_plain();  // capture failed once for this key: stay on the plain path
      path = DispatchPath::capture_failed;
    }
  }
  state.host_step += k;
  return path;
}

StepMetrics read_metrics(ExecSpace const& space, TrainState const& state, int k) {
  StepMetrics m;
  space.fence();
  m.loss.resize(std::size_t(k));
  m.correct.resize(std::size_t(k));
  auto range = std::make_pair<std::size_t, std::size_t>(0, std::size_t(k));
  Kokkos::deep_copy(HostView<float*>(m.loss.data(), m.loss.size()), Kokkos::subview(state.loss, range));
  Kokkos::deep_copy(HostView<std::int32_t*>(m.correct.data(), m.correct.size()),
                    Kokkos::subview(state.correct, range));
  return m;
}

Evaluator::Evaluator(Model const& model, std::int64_t batch, Normalization norm)
    : batch_(std::min(batch, model.max_batch())),
      norm_(norm),
      x_("ktr::eval::x", model.input_shape(batch_)),
      y_("ktr::eval::y", std::size_t(batch_)),
      loss_("ktr::eval::loss", 1),
      correct_("ktr::eval::correct", 1) {}

EvalResult Evaluator::run(ExecSpace const& space, Model& model, DeviceDataset const& data) {
  Kokkos::deep_copy(space, loss_, 0.0f);
  Kokkos::deep_copy(space, correct_, 0);
  for (std::int64_t first = 0; first < data.count; first += batch_) {
    std::int64_t const b = std::min(batch_, data.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b));
    gather_range(space, data, first, norm_, x, y_);
    Tensor const logits = model.forward(space, x);
    softmax_cross_entropy(space, logits, y_, Tensor(), LossOutput{loss_, correct_, 0, true});
  }
  float loss_sum = 0;
  std::int32_t hits = 0;
  space.fence();  // the scalars below are read through the default instance, which does not wait for `space`
  Kokkos::deep_copy(loss_sum, Kokkos::subview(loss_, 0));
  Kokkos::deep_copy(hits, Kokkos::subview(correct_, 0));
  return EvalResult{loss_sum / double(data.count), hits / double(data.count), data.count};
}

}  // namespace ktr
