// The C API's input derivatives (models/jet.hpp): ktr_derivatives and ktr_vjp at inference, and the split training
// step on a loss of derivatives (ktr_jet_forward, ktr_jet_backward, ktr_apply_gradients): the caller's residual
// code sits between the forward and the backward, the gradients of several point sets add up, one optimiser update
// applies them.
#include "guard.hpp"
#include "ktr_array.h"
#include "registry.hpp"

#include "../backends/region.hpp"
#include "../data/strided.hpp"
#include "../models/jet.hpp"

#include <string>

namespace ktr::capi {

namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

// One jet of a model: made for a spec and an architecture, with the buffers its calls pack the caller's arrays
// into and write their outputs to, grown when a call needs more (point sets of several sizes take turns without
// allocating).
struct JetCall {
  std::string spec, description;
  std::unique_ptr<Jet<float>> jet;
  Kokkos::View<float*, MemSpace> input, u, derivs, u_seed, derivs_seed;
};

// The first n entries of `buffer`, grown if it holds fewer.
float* room(Kokkos::View<float*, MemSpace>& buffer, std::int64_t n, char const* label) {
  if (std::int64_t(buffer.extent(0)) < n)
    buffer = Kokkos::View<float*, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                            std::size_t(n));
  return buffer.data();
}

// A model's jets: ktr_derivatives' and ktr_vjp's (inference never disturbs a pending training forward), the split
// step's, and the gradient its backwards add up until ktr_apply_gradients.
struct JetState {
  JetCall inference, vjp, training;
  Kokkos::View<float*, MemSpace> scale, shift;  // the model's input transform, per input
  bool own_transform = false;                   // scale and shift are this state's (else the transform's views)
  Kokkos::View<float*, MemSpace> grads;         // arena layout
  Kokkos::View<float*, MemSpace> loss;          // lbfgs: the loss of the gradients applied
  bool has_grads = false;
};

JetState& state_of(Entry& e) {
  if (!e.jets) e.jets = std::make_shared<JetState>();
  return *static_cast<JetState*>(e.jets.get());
}

std::string model_label(char const* name) { return "model '" + std::string(name) + "'"; }

Jet<float>& jet_of(JetCall& c, Model const& model, std::string const& spec) {
  if (!c.jet || c.spec != spec || c.description != model.description()) {
    c.jet.reset();  // a spec refused leaves no jet of the last one behind under this one's name
    c.jet = std::make_unique<Jet<float>>(model, JetSpec::parse(spec, model.input_shape(1).inner()));
    c.spec = spec, c.description = model.description();
  }
  return *c.jet;
}

// The model's input transform x' = x * scale + shift, one entry per input.
void transform_of(ExecSpace const& space, JetState& s, InputTransform const& t, std::int64_t d) {
  if (t.per_feature()) {
    s.scale = t.feature_scale, s.shift = t.feature_shift, s.own_transform = false;
    return;
  }
  if (!s.own_transform || std::int64_t(s.scale.extent(0)) != d) {
    s.scale = Kokkos::View<float*, MemSpace>("ktr::capi::jet_scale", std::size_t(d));
    s.shift = Kokkos::View<float*, MemSpace>("ktr::capi::jet_shift", std::size_t(d));
    s.own_transform = true;
  }
  float const a = t.scale, b = t.shift;
  auto scale = s.scale, shift = s.shift;
  Kokkos::parallel_for(
      "ktr::capi::jet_transform", Range(space, 0, d),
      KOKKOS_LAMBDA(std::int64_t i) { scale(i) = a, shift(i) = b; });
}

void require_real(Array const& a, char const* what) {
  KTR_REQUIRE(a.dtype == KTR_FLOAT || a.dtype == KTR_DOUBLE, what, "must be KTR_FLOAT or KTR_DOUBLE");
}

void require_extents(Array const& a, std::int64_t n, std::int64_t per_point, std::string const& shape,
                     char const* what) {
  KTR_REQUIRE(a.count() == n && a.sample_size() == per_point, what,
              "must be " + shape + " = " + std::to_string(n) + " x " + std::to_string(per_point) +
                  " values, not " + std::to_string(a.count()) + " x " + std::to_string(a.sample_size()));
}

// The model's Trainer for a jet: the trained or loaded one; TorchFort's initial weights; for the split step a
// model that has seen no batch is made here, its `normalize: standard` transform fitted on this input.
Trainer& trainer_of(ExecSpace const& space, Entry& e, char const* name, Array const& x, bool training) {
  if (!e.trainer && (training || e.torchfort)) {
    auto t = Trainer::untrained(space, untrained_config(e, true), options_of(e.cfg, e.torchfort), e.comm);
    if (training && e.cfg.run.normalize == InputTransformMode::standard)
      t->session().set_input_transform(
          fit_input_transform(space, features_of(space, x, t->model(), "input"), InputTransformMode::standard));
    e.trainer = std::move(t);
  }
  KTR_REQUIRE(e.trainer != nullptr, model_label(name),
              "has not been trained or loaded yet (ktr_train, ktr_push, ktr_load_checkpoint or ktr_jet_forward "
              "first)");
  return *e.trainer;
}

// u and the spec's derivatives at the points `x` into the caller's arrays.
void jet_forward(ExecSpace const& space, Entry& e, JetCall& c, Trainer& t, char const* spec, Array const& x,
                 Array const& out, Array const* derivs) {
  KTR_REQUIRE(spec != nullptr, "spec", "is NULL (an empty string asks for no derivatives)");
  Model const& model = t.model();
  Jet<float>& jet = jet_of(c, model, spec);
  std::int64_t const n = x.count(), d = jet.inputs(), m = jet.outputs(), T = std::int64_t(jet.spec().size());
  require_real(x, "input");
  require_extents(x, n, d, "(N, d)", "input");
  require_real(out, "output");
  require_extents(out, n, m, "(N, m)", "output");
  if (T == 0)
    KTR_REQUIRE(derivs == nullptr, "derivs", "must be NULL with dimension 0: the spec asks for no derivatives");
  else
    KTR_REQUIRE(derivs != nullptr, "derivs",
                "is NULL, but the spec '" + jet.spec().str() + "' asks for " + std::to_string(T) + " columns");
  if (derivs) {
    require_real(*derivs, "derivs");
    require_extents(*derivs, n, m * T, "(N, m, T)", "derivs");
  }
  auto const points = pack_strided<float>(space, x.strided(), c.input);
  JetState& s = state_of(e);
  transform_of(space, s, t.config().input_transform, d);
  JetMatrix<float> const u(room(c.u, n * m, "ktr::capi::jet_u"), n, m);
  JetCube<float> const dv(room(c.derivs, n * m * T, "ktr::capi::jet_derivs"), n, m, T);
  jet.forward(space, model.arena().params(), s.scale, s.shift, JetMatrix<float const>(points.data(), n, d), u, dv);
  scatter_strided(space, u.data(), out.strided());
  if (derivs) scatter_strided(space, dv.data(), derivs->strided());
}

ktr_result_t derivatives(char const* name, char const* spec, Array const& x, Array const& out, Array const* derivs,
                         void* stream, bool training) {
  return guarded([&] {
    Region const region(training ? "ktr::capi::jet_forward" : "ktr::capi::derivatives");
    Entry& e = entry(name);
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = trainer_of(space, e, name, x, training);
    if (training) {
      KTR_REQUIRE(t.config().precision != MatmulPrecision::bf16, model_label(name),
                  "trains in bf16: derivative channels are fp32 (set precision: fp32)");
      KTR_REQUIRE(t.config().accumulate == 1, model_label(name),
                  "has grad_accumulation_steps " + std::to_string(t.config().accumulate) +
                      ": the split step adds the gradients of its backwards itself (set it to 1)");
    }
    JetState& s = state_of(e);
    jet_forward(space, e, training ? s.training : s.inference, t, spec, x, out, derivs);
  });
}

ktr_result_t vjp(char const* name, Array const& x, Array const& cot, Array const& input_grad, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::vjp");
    Entry& e = entry(name);
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = trainer_of(space, e, name, x, false);
    JetState& s = state_of(e);
    Model const& model = t.model();
    Jet<float>& jet = jet_of(s.vjp, model, "");
    std::int64_t const n = x.count(), d = jet.inputs(), m = jet.outputs();
    for (auto [a, what, w, shape] : {std::tuple{&x, "input", d, "(N, d)"},
                                     {&cot, "cotangent", m, "(N, m)"},
                                     {&input_grad, "input_grad", d, "(N, d)"}}) {
      require_real(*a, what);
      require_extents(*a, n, w, shape, what);
    }
    JetCall& c = s.vjp;
    auto const points = pack_strided<float>(space, x.strided(), c.input);
    auto const seed = pack_strided<float>(space, cot.strided(), c.u_seed);
    transform_of(space, s, t.config().input_transform, d);
    JetMatrix<float> const u(room(c.u, n * m, "ktr::capi::vjp_u"), n, m),
        grad(room(c.derivs, n * d, "ktr::capi::vjp_grad"), n, d);
    jet.forward(space, model.arena().params(), s.scale, s.shift, JetMatrix<float const>(points.data(), n, d), u,
                {});
    jet.backward(space, model.arena().params(), JetMatrix<float const>(seed.data(), n, m), {}, {}, grad);
    scatter_strided(space, grad.data(), input_grad.strided());
  });
}

ktr_result_t jet_backward(char const* name, Array const* u_seed, Array const* d_seed, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::jet_backward");
    Entry& e = entry(name);
    JetState& s = state_of(e);
    JetCall& c = s.training;
    KTR_REQUIRE(e.trainer && c.jet && c.jet->pending(), model_label(name),
                "has no forward to go back through: ktr_jet_forward first (each backward consumes its forward)");
    KTR_REQUIRE(c.description == e.trainer->model().description(), model_label(name),
                "was replaced since its ktr_jet_forward");
    ExecSpace const space = e.instances.of(stream);
    Jet<float>& jet = *c.jet;
    std::int64_t const n = jet.points(), m = jet.outputs(), T = std::int64_t(jet.spec().size());
    Kokkos::View<float*, MemSpace> us, ds;
    if (u_seed) {
      require_real(*u_seed, "output_seed");
      require_extents(*u_seed, n, m, "(N, m) as the forward's output", "output_seed");
      us = pack_strided<float>(space, u_seed->strided(), c.u_seed);
    }
    if (d_seed) {
      KTR_REQUIRE(T > 0, "derivs_seed", "must be NULL: the forward's spec asks for no derivatives");
      require_real(*d_seed, "derivs_seed");
      require_extents(*d_seed, n, m * T, "(N, m, T) as the forward's derivs", "derivs_seed");
      ds = pack_strided<float>(space, d_seed->strided(), c.derivs_seed);
    }
    Model& model = e.trainer->model();
    std::size_t const size = std::size_t(model.arena().size());
    if (s.grads.extent(0) != size)
      s.grads = Kokkos::View<float*, MemSpace>("ktr::capi::jet_grads", size), s.has_grads = false;
    if (!s.has_grads) Kokkos::deep_copy(space, s.grads, 0.0f);
    jet.backward(space, model.arena().params(),
                 us.data() ? JetMatrix<float const>(us.data(), n, m) : JetMatrix<float const>(),
                 ds.data() ? JetCube<float const>(ds.data(), n, m, T) : JetCube<float const>(), s.grads, {});
    s.has_grads = true;
  });
}

ktr_result_t apply_gradients(char const* name, float loss_for_log, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::apply_gradients");
    Entry& e = entry(name);
    JetState& s = state_of(e);
    KTR_REQUIRE(e.trainer && s.has_grads, model_label(name),
                "has no gradient to apply: no ktr_jet_backward since its last update");
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = *e.trainer;
    TrainState& state = t.session().state();
    if (e.comm.size() > 1) {  // the ranks' mean
      float const share = 1.0f / float(e.comm.size());
      auto g = s.grads;
      Kokkos::parallel_for(
          "ktr::capi::jet_grads_share", Range(space, 0, std::int64_t(g.extent(0))),
          KOKKOS_LAMBDA(std::int64_t i) { g(i) *= share; });
      e.comm.allreduce_sum(space, s.grads);
    }
    if (state.optimizer.lbfgs()) {  // its line search reads the loss these gradients belong to
      if (s.loss.extent(0) == 0) s.loss = Kokkos::View<float*, MemSpace>("ktr::capi::jet_loss", 1);
      Kokkos::deep_copy(space, s.loss, loss_for_log);
      state.optimizer.update(space, t.model().arena().params(), s.grads, state.step, s.loss.data(), 1);
    } else {
      state.optimizer.update(space, t.model().arena().params(), s.grads, state.step);
    }
    state.count_steps(1);
    s.has_grads = false;
    report(e, name, loss_for_log);
  });
}

// An optional array: NULL data with dimension 0 is none.
bool optional_array(void* data, std::int64_t dim, std::int64_t const* shape, ktr_datatype_t dtype,
                    char const* what, Array& a) {
  if (data == nullptr && dim == 0) return false;
  a = c_array(data, dim, shape, dtype, what);
  return true;
}

ktr_result_t derivatives_c(char const* name, char const* spec, void* input, std::int64_t input_dim,
                           std::int64_t const* input_shape, ktr_datatype_t input_dtype, void* output,
                           std::int64_t output_dim, std::int64_t const* output_shape, ktr_datatype_t output_dtype,
                           void* derivs, std::int64_t derivs_dim, std::int64_t const* derivs_shape,
                           ktr_datatype_t derivs_dtype, void* stream, bool training) {
  Array x, out, d;
  bool has_d = false;
  ktr_result_t const r = guarded([&] {
    x = c_array(input, input_dim, input_shape, input_dtype, "input");
    out = c_array(output, output_dim, output_shape, output_dtype, "output");
    has_d = optional_array(derivs, derivs_dim, derivs_shape, derivs_dtype, "derivs", d);
  });
  return r != KTR_RESULT_SUCCESS ? r : derivatives(name, spec, x, out, has_d ? &d : nullptr, stream, training);
}

// The same from a binding's descriptions (the Fortran module's): derivs NULL is none.
ktr_result_t described_derivatives(char const* name, char const* spec, ktr_array_t const* input,
                                   ktr_array_t const* output, ktr_array_t const* derivs, void* stream,
                                   bool training) {
  Array x, out, d;
  ktr_result_t const r = guarded([&] {
    x = described_array(input, "input");
    out = described_array(output, "output");
    if (derivs) d = described_array(derivs, "derivs");
  });
  return r != KTR_RESULT_SUCCESS ? r : derivatives(name, spec, x, out, derivs ? &d : nullptr, stream, training);
}

}  // namespace

}  // namespace ktr::capi

using namespace ktr;
using namespace ktr::capi;

extern "C" {

ktr_result_t ktr_derivatives(char const* name, char const* spec, void* input, std::int64_t input_dim,
                             std::int64_t const* input_shape, ktr_datatype_t input_dtype, void* output,
                             std::int64_t output_dim, std::int64_t const* output_shape,
                             ktr_datatype_t output_dtype, void* derivs, std::int64_t derivs_dim,
                             std::int64_t const* derivs_shape, ktr_datatype_t derivs_dtype, void* stream) {
  return derivatives_c(name, spec, input, input_dim, input_shape, input_dtype, output, output_dim, output_shape,
                       output_dtype, derivs, derivs_dim, derivs_shape, derivs_dtype, stream, false);
}

ktr_result_t ktr_jet_forward(char const* name, char const* spec, void* input, std::int64_t input_dim,
                             std::int64_t const* input_shape, ktr_datatype_t input_dtype, void* output,
                             std::int64_t output_dim, std::int64_t const* output_shape,
                             ktr_datatype_t output_dtype, void* derivs, std::int64_t derivs_dim,
                             std::int64_t const* derivs_shape, ktr_datatype_t derivs_dtype, void* stream) {
  return derivatives_c(name, spec, input, input_dim, input_shape, input_dtype, output, output_dim, output_shape,
                       output_dtype, derivs, derivs_dim, derivs_shape, derivs_dtype, stream, true);
}

ktr_result_t ktr_vjp(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                     ktr_datatype_t input_dtype, void* cotangent, std::int64_t cot_dim,
                     std::int64_t const* cot_shape, ktr_datatype_t cot_dtype, void* input_grad,
                     std::int64_t ig_dim, std::int64_t const* ig_shape, ktr_datatype_t ig_dtype, void* stream) {
  Array x, cot, grad;
  ktr_result_t const r = guarded([&] {
    x = c_array(input, input_dim, input_shape, input_dtype, "input");
    cot = c_array(cotangent, cot_dim, cot_shape, cot_dtype, "cotangent");
    grad = c_array(input_grad, ig_dim, ig_shape, ig_dtype, "input_grad");
  });
  return r != KTR_RESULT_SUCCESS ? r : vjp(name, x, cot, grad, stream);
}

ktr_result_t ktr_jet_backward(char const* name, void* output_seed, std::int64_t os_dim,
                              std::int64_t const* os_shape, ktr_datatype_t os_dtype, void* derivs_seed,
                              std::int64_t ds_dim, std::int64_t const* ds_shape, ktr_datatype_t ds_dtype,
                              void* stream) {
  Array us, ds;
  bool has_u = false, has_d = false;
  ktr_result_t const r = guarded([&] {
    has_u = optional_array(output_seed, os_dim, os_shape, os_dtype, "output_seed", us);
    has_d = optional_array(derivs_seed, ds_dim, ds_shape, ds_dtype, "derivs_seed", ds);
  });
  return r != KTR_RESULT_SUCCESS ? r : jet_backward(name, has_u ? &us : nullptr, has_d ? &ds : nullptr, stream);
}

ktr_result_t ktr_apply_gradients(char const* name, float loss_for_log, void* stream) {
  return apply_gradients(name, loss_for_log, stream);
}

ktr_result_t ktr_derivatives_array(char const* name, char const* spec, ktr_array_t const* input,
                                   ktr_array_t const* output, ktr_array_t const* derivs, void* stream) {
  return described_derivatives(name, spec, input, output, derivs, stream, false);
}

ktr_result_t ktr_jet_forward_array(char const* name, char const* spec, ktr_array_t const* input,
                                   ktr_array_t const* output, ktr_array_t const* derivs, void* stream) {
  return described_derivatives(name, spec, input, output, derivs, stream, true);
}

ktr_result_t ktr_vjp_array(char const* name, ktr_array_t const* input, ktr_array_t const* cotangent,
                           ktr_array_t const* input_grad, void* stream) {
  Array x, cot, grad;
  ktr_result_t const r = guarded([&] {
    x = described_array(input, "input");
    cot = described_array(cotangent, "cotangent");
    grad = described_array(input_grad, "input_grad");
  });
  return r != KTR_RESULT_SUCCESS ? r : vjp(name, x, cot, grad, stream);
}

ktr_result_t ktr_jet_backward_array(char const* name, ktr_array_t const* output_seed,
                                    ktr_array_t const* derivs_seed, void* stream) {
  Array us, ds;
  ktr_result_t const r = guarded([&] {
    if (output_seed) us = described_array(output_seed, "output_seed");
    if (derivs_seed) ds = described_array(derivs_seed, "derivs_seed");
  });
  return r != KTR_RESULT_SUCCESS
             ? r
             : jet_backward(name, output_seed ? &us : nullptr, derivs_seed ? &ds : nullptr, stream);
}

}  // extern "C"
