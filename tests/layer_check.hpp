// check_layer: a layer's device forward against a host double reference, and its device gradients (input and
// parameters) against central finite differences of that reference.
#pragma once

#include <ktr/models/arena.hpp>
#include <ktr/models/layers.hpp>
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace ktr::test {

// f(x, params) -> y in double, params in param_specs order.
using RefForward = std::function<Vec(Vec const&, std::vector<Vec> const&)>;

inline void expect_close(std::vector<float> const& got, Vec const& want, double tol, char const* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

// Checks a layer on input shape `in`: forward against `ref`, backward of L = sum(r * y) against finite
// differences of the reference.
// `out` overrides the layer's output shape (a layer that has absorbed the next one writes that one's output).
inline void check_layer(ktr::Layer& layer, Shape in, RefForward const& ref, std::uint32_t seed,
                        Shape out = Shape()) {
  ktr::ExecSpace space;
  if (out.rank == 0) out = layer.output_shape(in);
  ktr::StandaloneLayer standalone(layer, in);
  ktr::Arena const& arena = standalone.arena;
  std::vector<Tensor> grads;
  std::vector<Vec> host_params;
  for (std::size_t i = 0; i < arena.count(); ++i) {
    grads.push_back(arena.grad(i));
    auto v = random_floats(arena.param(i).size(), seed + 10 + std::uint32_t(i), -0.5f, 0.5f);
    ktr::from_host(arena.param(i), v);
    host_params.push_back(to_double(v));
  }

  auto hx = random_floats(in.size(), seed);
  Tensor x("x", in), y("y", out), dy("dy", out), dx("dx", in);
  ktr::from_host(x, hx);
  if (layer.is_view()) y = x.reshaped(out);
  layer.forward(space, ktr::Precision{}, x, y);
  Vec const xd = to_double(hx);
  expect_close(ktr::to_host(y), ref(xd, host_params), 1e-5, "forward");

  auto r = random_floats(out.size(), seed + 99);
  ktr::from_host(dy, r);
  Vec const rd = to_double(r);
  layer.backward(space, ktr::Precision{}, x, y, dy, dx);

  auto objective_x = [&](Vec const& v) { return dot(rd, ref(v, host_params)); };
  expect_close(ktr::to_host(dx), finite_difference(objective_x, xd), 1e-4, "d/dx");
  for (std::size_t p = 0; p < host_params.size(); ++p) {
    auto objective_p = [&](Vec const& v) {
      auto ps = host_params;
      ps[p] = v;
      return dot(rd, ref(xd, ps));
    };
    expect_close(ktr::to_host(grads[p]), finite_difference(objective_p, host_params[p]), 1e-4,
                 arena.spec(p).name.c_str());
  }
}

}  // namespace ktr::test
