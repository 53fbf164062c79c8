// Input derivatives of a model ("jets"): with each point's value, its first derivatives with respect to chosen
// inputs, chosen second derivatives and collapsed Laplacians (a sum of second derivatives carried as one channel:
// the forward Laplacian), propagated through the network in one pass; then the reverse pass over that jet, which
// gives the parameter gradient of any loss of the value and the derivatives (physics-informed and Sobolev losses)
// and the input gradient (a vector-Jacobian product).
//
//   JetSpec const spec = JetSpec::parse("d0 d1 d0,0 lap", 2);   // u_x, u_t, u_xx, u_xx + u_tt
//   Jet<float> jet(model, spec, 1024);
//   jet.forward(space, model.arena().params(), {}, {}, x, u, derivs);  // u (N, m), derivs (N, m, 4)
//   jet.backward(space, params, u_seed, derivs_seed, grads, {});        // grads += sum seed . d/dtheta
//
// Channels: 0 the value, then one per input some token differentiates by (first derivatives), one per
// second-derivative token and one per Laplacian token. A layer's jet is one feature-major (width, C, N) buffer,
// the points contiguous. A dense layer multiplies every channel by its kernel in one matrix product (C N columns:
// more columns, not more products) and adds its bias to the value only; an activation maps z's channels with f',
// f'' (and f''' in the reverse pass): a_i = f' z_i, a_ij = f'' z_i z_j + f' z_ij, lap a = f'' sum_k z_k^2 + f' lap
// z.
//
// Models: dense layers with any fused activation, and flatten. Second derivatives and Laplacians need f'' and are
// refused through relu, leaky_relu and elu (first derivatives only) naming the layer; any other layer is refused
// by name. Derivatives are with respect to the raw inputs x of an input transform x' = x * scale + shift: the
// first derivative channels start at scale_i, so they carry the transform exactly.
//
// T is float (the products through ktr's gemm) or double (a portable product kernel: references and checks in
// double on a model's fp32 weights, converted).
#pragma once

#include "../core/types.hpp"
#include "activation.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

class Model;

/// The derivative columns asked for: space-separated tokens, each one output column. `d<i>` du/dx_i, `d<i>,<j>`
/// the second derivative (`d1,0` is `d0,1`), `lap` the Laplacian over every input, `lap<i>,<j>,...` over the
/// listed inputs. Indices are 0-based.
struct JetSpec {
  enum class Kind { first, second, laplacian };
  struct Token {
    Kind kind = Kind::first;
    std::vector<int> inputs;  ///< first: {i}; second: {i, j}, i <= j; laplacian: sorted, distinct
    std::string text;         ///< as normalised ("d0,1", "lap", "lap0,2")
  };
  std::vector<Token> tokens;

  /// Parses `spec` for a model of `inputs` inputs; throws UsageError naming the token that is unknown, out of
  /// range, malformed or repeated. An empty spec has no tokens.
  static JetSpec parse(std::string const& spec, std::int64_t inputs);
  std::size_t size() const { return tokens.size(); }
  /// True if some token needs second derivatives (a second or a Laplacian).
  bool second_order() const;
  /// The tokens' texts, space-separated.
  std::string str() const;
};

template <class T>
using JetMatrix = Kokkos::View<T**, Kokkos::LayoutRight, MemSpace>;
template <class T>
using JetCube = Kokkos::View<T***, Kokkos::LayoutRight, MemSpace>;

/// The jet of one model for one spec, with room for up to `max_points` points (grown by a larger call).
template <class T>
class Jet {
 public:
  /// Throws UsageError naming the layer a model of other layers holds, or the layer with a first-derivative-only
  /// activation where `spec` needs second derivatives.
  Jet(Model const& model, JetSpec spec, std::int64_t max_points = 0);

  JetSpec const& spec() const { return spec_; }
  std::int64_t inputs() const { return inputs_; }
  std::int64_t outputs() const { return widths_.back(); }
  /// Channels carried: 1 + first-derivative inputs + second-derivative tokens + Laplacian tokens.
  int channels() const { return channels_; }
  /// Parameters' element count of the arena layout `params` and `grads` have.
  std::int64_t arena_size() const { return arena_size_; }

  /// u (N, m) and derivs (N, m, T) (T = spec().size(); may be empty when T = 0) at points x (N, d). `params`: the
  /// model's arena layout in T; `scale` and `shift` (d): the input transform x' = x * scale + shift (empty: 1 and
  /// 0). Keeps what the reverse pass needs.
  void forward(ExecSpace const& space, Kokkos::View<T const*, MemSpace> const& params,
               Kokkos::View<T const*, MemSpace> const& scale, Kokkos::View<T const*, MemSpace> const& shift,
               JetMatrix<T const> const& x, JetMatrix<T> const& u, JetCube<T> const& derivs);
  /// The reverse pass of the last forward (which it consumes: a second is refused) for the loss sum_n u_seed . u +
  /// derivs_seed . derivs (an empty seed is zero): adds the parameter gradient into `grads` (arena layout; none if
  /// empty) and writes the input gradient into `input_grad` (N, d) if it is not empty.
  void backward(ExecSpace const& space, Kokkos::View<T const*, MemSpace> const& params,
                JetMatrix<T const> const& u_seed, JetCube<T const> const& derivs_seed,
                Kokkos::View<T*, MemSpace> const& grads, JetMatrix<T> const& input_grad);
  /// True between a forward and the backward that consumes it.
  bool pending() const { return pending_; }
  /// Points of the last forward (0 before any).
  std::int64_t points() const { return points_; }

 private:
  void reserve(std::int64_t points);

  JetSpec spec_;
  std::int64_t inputs_ = 0, arena_size_ = 0;
  int channels_ = 1, first_ = 0, second_ = 0, laps_ = 0;
  std::vector<std::int64_t> widths_;                       // widths_[0] = d, widths_[l + 1] = layer l's output
  std::vector<Activation> acts_;                           // per dense layer
  std::vector<std::int64_t> kernel_offset_, bias_offset_;  // into the arena, per dense layer
  Kokkos::View<int*, MemSpace> first_inputs_;              // the input of each first-derivative channel
  Kokkos::View<int*, MemSpace> pairs_;                     // per second token: its two first channels
  Kokkos::View<int*, MemSpace> lap_start_, lap_channels_;  // per Laplacian token: its first channels (CSR)
  std::vector<int> token_channel_;                         // the channel of each token
  Kokkos::View<int*, MemSpace> token_channel_d_;
  Kokkos::View<T*, MemSpace> acts_buf_, zs_buf_, grad_a_, grad_z_;
  Kokkos::View<T*, MemSpace> products_;              // host builds: the reductions' partial sums
  std::vector<std::int64_t> act_offset_, z_offset_;  // per layer, in units of points (C x width per point)
  Kokkos::View<T const*, MemSpace> scale_;           // the last forward's
  std::int64_t capacity_ = 0, points_ = 0;
  bool pending_ = false;  // a forward waits for its backward
};

extern template class Jet<float>;
extern template class Jet<double>;

}  // namespace ktr
