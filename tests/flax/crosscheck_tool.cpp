// The ktr half of the Flax/Optax cross-check (tests/flax/crosscheck.py): for a model description, Flax-named
// weights and one batch, writes what ktr computes, as safetensors:
//   logits (B, C) (or a field model's output (B, H, W, C)), loss (1,), grad.<param>, adam.<param> and
//   adamw.<param> (the parameters after one Optax-default Adam / AdamW step at lr 1e-3 from those gradients).
//   Integer Y: class labels and softmax cross-entropy; float Y: targets of the output's shape and the mean squared
//   error. ktr_crosscheck DESC WEIGHTS.safetensors X.npy Y.npy OUT.safetensors [PRECISION]
//   PRECISION (fp32 unless given): the forward and backward's matmul precision, e.g. bf16.
// Input derivatives (models/jet.hpp): u (N, m), derivs (N, m, T) for SPEC, and grad.<param> of the loss
// sum(SU * u) + sum(SD * derivs):
//   ktr_crosscheck --jet DESC WEIGHTS.safetensors X.npy SPEC SU.npy SD.npy OUT.safetensors
#include <ktr/data/npy.hpp>
#include <ktr/ktr.hpp>
#include <ktr/models/jet.hpp>
#include <ktr/train/interop.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

int jet_check(char* argv[]) {
  ktr::ExecSpace space;
  ktr::NpyArray const xa = ktr::read_npy(argv[4]), su = ktr::read_npy(argv[6]), sd = ktr::read_npy(argv[7]);
  std::int64_t const N = xa.shape.at(0), d = xa.shape.at(1);
  ktr::Model model(argv[2], N);
  ktr::ImportedWeights const w = ktr::import_weights(model, ktr::read_safetensors(argv[3]), argv[3]);
  Kokkos::deep_copy(model.arena().params(), ktr::HostView<const float*>(w.params.data(), w.params.size()));
  ktr::Jet<float> jet(model, ktr::JetSpec::parse(argv[5], d), N);
  std::int64_t const m = jet.outputs(), T = std::int64_t(jet.spec().size());
  auto device = [](std::vector<double> const& v, auto view) {
    auto h = Kokkos::create_mirror_view(view);
    for (std::size_t i = 0; i < v.size(); ++i) h.data()[i] = float(v[i]);
    Kokkos::deep_copy(view, h);
    return view;
  };
  auto const x = device(xa.values, ktr::JetMatrix<float>("jet::x", N, d));
  auto const us = device(su.values, ktr::JetMatrix<float>("jet::su", N, m));
  auto const ds = device(sd.values, ktr::JetCube<float>("jet::sd", N, m, T));
  ktr::JetMatrix<float> u("jet::u", N, m);
  ktr::JetCube<float> derivs("jet::derivs", N, m, T);
  ktr::DeviceView<float*> grads("jet::grads", std::size_t(model.arena().size()));
  jet.forward(space, model.arena().params(), {}, {}, x, u, derivs);
  jet.backward(space, model.arena().params(), us, ds, grads, {});
  space.fence();
  auto host = [](auto view) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), view);
    return std::vector<float>(h.data(), h.data() + h.size());
  };
  ktr::SafeTensors out;
  out.tensors["u"] = ktr::SafeTensor{"F32", {N, m}, host(u)};
  out.tensors["derivs"] = ktr::SafeTensor{"F32", {N, m, T}, host(derivs)};
  ktr::RunConfig cfg;
  cfg.model = model.description();
  for (auto& [name, t] : ktr::export_weights(model, host(grads), cfg).tensors) out.tensors["grad." + name] = t;
  ktr::write_safetensors(argv[8], out);
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc == 9 && std::string(argv[1]) == "--jet") {
    ktr::Runtime runtime;
    try {
      return jet_check(argv);
    } catch (ktr::Error const& e) {
      std::fprintf(stderr, "ktr_crosscheck --jet: %s\n", e.what());
      return 1;
    }
  }
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr,
                 "usage: ktr_crosscheck DESC WEIGHTS.safetensors X.npy Y.npy OUT.safetensors [PRECISION]\n");
    return 2;
  }
  ktr::Runtime runtime;
  try {
    ktr::ExecSpace space;
    ktr::NpyArray const xa = ktr::read_npy(argv[3]), ya = ktr::read_npy(argv[4]);
    std::int64_t const B = xa.shape.at(0);
    ktr::Model model(argv[1], B);
    ktr::ImportedWeights const w = ktr::import_weights(model, ktr::read_safetensors(argv[2]), argv[2]);
    Kokkos::deep_copy(model.arena().params(), ktr::HostView<const float*>(w.params.data(), w.params.size()));
    ktr::Tensor x("crosscheck::x", model.input_shape(B));
    ktr::from_host(x, std::vector<float>(xa.values.begin(), xa.values.end()));
    ktr::DeviceView<float*> loss("crosscheck::loss", 1);
    ktr::DeviceView<std::int32_t*> correct("crosscheck::correct", 1);
    ktr::Precision const precision{
        argc == 7 ? ktr::parse_matmul_precision(argv[6], "PRECISION") : ktr::MatmulPrecision::fp32, {}};
    ktr::Tensor const logits = model.forward(space, precision, x);
    if (ya.is_integer()) {
      ktr::DeviceView<std::int32_t*> y("crosscheck::y", std::size_t(B));
      std::vector<std::int32_t> labels(ya.values.begin(), ya.values.end());
      Kokkos::deep_copy(y, ktr::HostView<const std::int32_t*>(labels.data(), labels.size()));
      ktr::softmax_cross_entropy(space, logits, y, model.dlogits(), ktr::LossOutput{loss, correct, 0, false});
    } else {
      ktr::Tensor targets("crosscheck::targets", logits.shape());
      ktr::from_host(targets, std::vector<float>(ya.values.begin(), ya.values.end()));
      ktr::regression_loss(space, ktr::RegressionLoss{}, logits, targets, model.dlogits(),
                           ktr::LossOutput{loss, correct, 0, false});
    }
    model.backward(space, precision);
    space.fence();

    ktr::SafeTensors out;
    std::vector<std::int64_t> const shape(logits.shape().dims.begin(),
                                          logits.shape().dims.begin() + logits.shape().rank);
    out.tensors["logits"] = ktr::SafeTensor{"F32", shape, ktr::to_host(logits)};
    out.tensors["loss"] = ktr::SafeTensor{"F32", {1}, ktr::download(loss)};
    ktr::RunConfig cfg;
    cfg.model = model.description();
    auto add = [&](std::string const& prefix, std::vector<float> const& arena) {
      for (auto& [name, t] : ktr::export_weights(model, arena, cfg).tensors) out.tensors[prefix + name] = t;
    };
    add("grad.", ktr::download(model.arena().grads()));
    for (auto kind : {ktr::OptimizerConfig::Kind::adam, ktr::OptimizerConfig::Kind::adamw}) {
      ktr::OptimizerConfig oc;  // Optax's defaults: lr 1e-3, b1 0.9, b2 0.999, eps 1e-8, AdamW decay 1e-4
      oc.kind = kind;
      ktr::Optimizer opt(oc, model.arena().size());
      ktr::DeviceView<float*> p("crosscheck::p", std::size_t(model.arena().size()));
      Kokkos::deep_copy(p, model.arena().params());
      Kokkos::View<std::int64_t, ktr::MemSpace> step("crosscheck::step");
      opt.update(space, p, model.arena().grads(), step);
      space.fence();
      add(kind == ktr::OptimizerConfig::Kind::adam ? "adam." : "adamw.", ktr::download(p));
    }
    ktr::write_safetensors(argv[5], out);
  } catch (ktr::Error const& e) {
    std::fprintf(stderr, "ktr_crosscheck: %s\n", e.what());
    return 1;
  }
  return 0;
}
