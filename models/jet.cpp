// Jets: the spec's parser, the channel plan, and the forward and reverse passes (models/jet.hpp).
#include "jet.hpp"

#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "jet_kernels.hpp"
#include "layers.hpp"
#include "model.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace ktr {

namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

// A non-negative index of at most 9 digits, or -1.
int parse_index(std::string const& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(s);
}

std::vector<int> parse_indices(std::string const& token, std::string const& list, std::int64_t inputs) {
  std::vector<int> out;
  std::string::size_type start = 0;
  while (true) {
    std::string::size_type const comma = list.find(',', start);
    std::string const part = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int const i = parse_index(part);
    if (i < 0)
      throw UsageError(
          "derivative spec token '" + token + "': '" + part +
          "' is not an input index (0-based digits; tokens are d<i>, d<i>,<j>, lap or lap<i>,<j>,...)");
    if (i >= inputs)
      throw UsageError("derivative spec token '" + token + "': input " + std::to_string(i) +
                       " is beyond the model's " + std::to_string(inputs) + " inputs (indices are 0-based)");
    out.push_back(i);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string joined(std::vector<int> const& v) {
  std::string s;
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? "," : "") + std::to_string(v[k]);
  return s;
}

}  // namespace

JetSpec JetSpec::parse(std::string const& spec, std::int64_t inputs) {
  JetSpec out;
  std::istringstream words(spec);
  std::string token;
  std::set<std::string> seen;
  while (words >> token) {
    Token t;
    if (token.rfind("lap", 0) == 0) {
      t.kind = Kind::laplacian;
      if (token == "lap") {
        for (int i = 0; i < inputs; ++i) t.inputs.push_back(i);
      } else {
        t.inputs = parse_indices(token, token.substr(3), inputs);
        std::vector<int> sorted = t.inputs;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
          throw UsageError("derivative spec token '" + token + "' names an input twice");
        t.inputs = sorted;
      }
      t.text = std::int64_t(t.inputs.size()) == inputs ? "lap" : "lap" + joined(t.inputs);
    } else if (token.size() > 1 && token[0] == 'd') {
      t.inputs = parse_indices(token, token.substr(1), inputs);
      if (t.inputs.size() > 2)
        throw UsageError("derivative spec token '" + token +
                         "': derivatives go to second order (d<i> or d<i>,<j>); a Laplacian is lap<i>,<j>,...");
      t.kind = t.inputs.size() == 1 ? Kind::first : Kind::second;
      std::sort(t.inputs.begin(), t.inputs.end());
      t.text = "d" + joined(t.inputs);
    } else {
      throw UsageError("derivative spec token '" + token +
                       "' is unknown: tokens are d<i>, d<i>,<j>, lap or lap<i>,<j>,... (0-based input indices)");
    }
    if (!seen.insert(t.text).second)
      throw UsageError("derivative spec token '" + token + "' repeats '" + t.text + "'");
    out.tokens.push_back(std::move(t));
  }
  return out;
}

bool JetSpec::second_order() const {
  return std::any_of(tokens.begin(), tokens.end(), [](Token const& t) { return t.kind != Kind::first; });
}

std::string JetSpec::str() const {
  std::string s;
  for (Token const& t : tokens) s += (s.empty() ? "" : " ") + t.text;
  return s;
}

template <class T>
Jet<T>::Jet(Model const& model, JetSpec spec, std::int64_t max_points) : spec_(std::move(spec)) {
  inputs_ = model.input_shape(1).inner();
  widths_.push_back(inputs_);
  Arena const& arena = model.arena();
  arena_size_ = arena.size();
  auto arena_index = [&](std::string const& name) {
    for (std::size_t i = 0; i < arena.count(); ++i)
      if (arena.spec(i).name == name) return arena.offset(i);
    throw Error("ktr::Jet: the model has no parameter " + name);
  };
  for (std::size_t i = 0; i < model.num_layers(); ++i) {
    Layer const& layer = model.layer(i);
    if (dynamic_cast<Flatten const*>(&layer)) continue;
    auto const* dense = dynamic_cast<Dense const*>(&layer);
    if (!dense)
      throw UsageError("input derivatives: layer " + std::to_string(i) + " ('" + layer.describe() +
                       "') is not a dense layer: jets take models of dense layers (with their activations) and "
                       "flatten");
    Activation const a = dense->activation();
    if (spec_.second_order() && !jet_second_order(a))
      throw UsageError("input derivatives: the spec '" + spec_.str() + "' needs second derivatives, which layer " +
                       std::to_string(i) + " ('" + layer.describe() + "') does not have: " + activation_name(a) +
                       " carries first derivatives only");
    std::string const module = "Dense_" + std::to_string(acts_.size());
    kernel_offset_.push_back(arena_index(module + ".kernel"));
    bias_offset_.push_back(arena_index(module + ".bias"));
    acts_.push_back(a);
    widths_.push_back(dense->output_shape(Shape{1, widths_.back()})[1]);
  }
  // The channel plan: first derivatives by every input a token names, in input order.
  std::set<int> firsts;
  for (auto const& t : spec_.tokens) firsts.insert(t.inputs.begin(), t.inputs.end());
  std::vector<int> const first(firsts.begin(), firsts.end());
  first_ = int(first.size());
  auto channel_of = [&](int input) {
    return 1 + int(std::lower_bound(first.begin(), first.end(), input) - first.begin());
  };
  std::vector<int> pairs, lap_start{0}, lap_channels;
  int S = 0, L = 0;
  for (auto const& t : spec_.tokens) S += t.kind == JetSpec::Kind::second, L += t.kind == JetSpec::Kind::laplacian;
  int s = 0, l = 0;
  for (auto const& t : spec_.tokens) {
    if (t.kind == JetSpec::Kind::first) {
      token_channel_.push_back(channel_of(t.inputs[0]));
    } else if (t.kind == JetSpec::Kind::second) {
      pairs.push_back(channel_of(t.inputs[0]));
      pairs.push_back(channel_of(t.inputs[1]));
      token_channel_.push_back(1 + first_ + s++);
    } else {
      for (int k : t.inputs) lap_channels.push_back(channel_of(k));
      lap_start.push_back(int(lap_channels.size()));
      token_channel_.push_back(1 + first_ + S + l++);
    }
  }
  channels_ = 1 + first_ + S + L;
  second_ = S, laps_ = L;
  auto to_device = [](char const* label, std::vector<int> const& v) {
    Kokkos::View<int*, MemSpace> d(std::string(label), std::max<std::size_t>(v.size(), 1));
    auto h = Kokkos::create_mirror_view(d);
    for (std::size_t k = 0; k < v.size(); ++k) h(k) = v[k];
    Kokkos::deep_copy(d, h);
    return d;
  };
  first_inputs_ = to_device("ktr::jet::first_inputs", first);
  pairs_ = to_device("ktr::jet::pairs", pairs);
  lap_start_ = to_device("ktr::jet::lap_start", lap_start);
  lap_channels_ = to_device("ktr::jet::lap_channels", lap_channels);
  token_channel_d_ = to_device("ktr::jet::token_channel", token_channel_);
  std::int64_t acts = 0, zs = 0;
  for (std::size_t k = 0; k < widths_.size(); ++k) {
    act_offset_.push_back(acts);
    acts += channels_ * widths_[k];
    if (k + 1 < widths_.size()) z_offset_.push_back(zs), zs += channels_ * widths_[k + 1];
  }
  if constexpr (jet::kHost)
    products_ = Kokkos::View<T*, MemSpace>("ktr::jet::products", std::size_t(jet::kScratch));
  reserve(max_points);
}

template <class T>
void Jet<T>::reserve(std::int64_t points) {
  if (points <= capacity_) return;
  std::int64_t const widest = *std::max_element(widths_.begin(), widths_.end());
  std::int64_t const acts = act_offset_.back() + channels_ * widths_.back(),
                     zs = z_offset_.back() + channels_ * widths_.back();
  Kokkos::resize(Kokkos::WithoutInitializing, acts_buf_, std::size_t(acts * points));
  Kokkos::resize(Kokkos::WithoutInitializing, zs_buf_, std::size_t(zs * points));
  Kokkos::resize(Kokkos::WithoutInitializing, grad_a_, std::size_t(channels_ * widest * points));
  Kokkos::resize(Kokkos::WithoutInitializing, grad_z_, std::size_t(channels_ * widest * points));
  capacity_ = points;
}

template <class T>
void Jet<T>::forward(ExecSpace const& space, Kokkos::View<T const*, MemSpace> const& params,
                     Kokkos::View<T const*, MemSpace> const& scale, Kokkos::View<T const*, MemSpace> const& shift,
                     JetMatrix<T const> const& x, JetMatrix<T> const& u, JetCube<T> const& derivs) {
  std::int64_t const N = std::int64_t(x.extent(0)), d = inputs_, m = outputs(), Tn = std::int64_t(spec_.size());
  KTR_REQUIRE(std::int64_t(x.extent(1)) == d, "ktr::Jet::forward",
              "the points have " + std::to_string(x.extent(1)) + " inputs, the model " + std::to_string(d));
  KTR_REQUIRE(std::int64_t(u.extent(0)) == N && std::int64_t(u.extent(1)) == m, "ktr::Jet::forward",
              "the output is (" + std::to_string(u.extent(0)) + ", " + std::to_string(u.extent(1)) +
                  "), the jet gives (" + std::to_string(N) + ", " + std::to_string(m) + ")");
  KTR_REQUIRE(Tn == 0 || (std::int64_t(derivs.extent(0)) == N && std::int64_t(derivs.extent(1)) == m &&
                          std::int64_t(derivs.extent(2)) == Tn),
              "ktr::Jet::forward",
              "the derivatives must be (N, m, T) = (" + std::to_string(N) + ", " + std::to_string(m) + ", " +
                  std::to_string(Tn) + ")");
  KTR_REQUIRE(std::int64_t(params.extent(0)) >= arena_size_, "ktr::Jet::forward", "the parameters are too few");
  KTR_REQUIRE(scale.extent(0) == 0 || std::int64_t(scale.extent(0)) == d, "ktr::Jet::forward",
              "the input scale has " + std::to_string(scale.extent(0)) + " entries, the model " +
                  std::to_string(d) + " inputs");
  KTR_REQUIRE(shift.extent(0) == 0 || std::int64_t(shift.extent(0)) == d, "ktr::Jet::forward",
              "the input shift has " + std::to_string(shift.extent(0)) + " entries, the model " +
                  std::to_string(d) + " inputs");
  reserve(N);
  points_ = N;
  scale_ = scale;
  pending_ = true;
  if (N == 0) return;
  int const C = channels_, F = first_;
  T* const acts = acts_buf_.data();
  T* const zs = zs_buf_.data();
  T const* const p = params.data();
  // The input's jet (d, C, N): the transformed value, scale_i in first channel i of input i, zeros elsewhere.
  {
    T* a0 = acts + act_offset_[0] * capacity_;
    auto first_inputs = first_inputs_;
    bool const scaled = scale.extent(0) > 0, shifted = shift.extent(0) > 0;
    Kokkos::parallel_for(
        "ktr::jet::input", Range(space, 0, N * d), KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const f = e / N, n = e % N, at = f * C * N + n;
          T const sc = scaled ? scale(f) : T(1);
          a0[at] = x(n, f) * sc + (shifted ? shift(f) : T(0));
          for (int c = 1; c < C; ++c) a0[at + c * N] = c <= F && first_inputs(c - 1) == f ? sc : T(0);
        });
  }
  jet::Tables const tables{F, second_, laps_, pairs_, lap_start_, lap_channels_};
  for (std::size_t l = 0; l < acts_.size(); ++l) {
    std::int64_t const in = widths_[l], out = widths_[l + 1];
    T* a = acts + act_offset_[l] * capacity_;
    T* z = zs + z_offset_[l] * capacity_;
    T* next = acts + act_offset_[l + 1] * capacity_;
    // z (out, C N) = W^T a, W (in, out) as the arena holds it
    jet::product<T>(space, true, false, p + kernel_offset_[l], a, T(0), z, out, C * N, in, products_.data());
    T const* bias = p + bias_offset_[l];
    with_jet_activation(acts_[l], [&](auto act) {
      jet::activation_forward<T, decltype(act)>(space, tables, N, out, C, bias, z, next);
    });
  }
  T const* last = acts + act_offset_.back() * capacity_;
  auto channel = token_channel_d_;
  Kokkos::parallel_for(
      "ktr::jet::output", Range(space, 0, N * m), KOKKOS_LAMBDA(std::int64_t e) {
        std::int64_t const n = e / m, o = e % m, at = o * C * N + n;
        u(n, o) = last[at];
        for (std::int64_t k = 0; k < Tn; ++k) derivs(n, o, k) = last[at + channel(k) * N];
      });
}

template <class T>
void Jet<T>::backward(ExecSpace const& space, Kokkos::View<T const*, MemSpace> const& params,
                      JetMatrix<T const> const& u_seed, JetCube<T const> const& derivs_seed,
                      Kokkos::View<T*, MemSpace> const& grads, JetMatrix<T> const& input_grad) {
  KTR_REQUIRE(pending_, "ktr::Jet::backward",
              "there is no forward to go back through: each backward needs a forward of its own");
  pending_ = false;
  std::int64_t const N = points_, d = inputs_, m = outputs(), Tn = std::int64_t(spec_.size());
  bool const has_u = u_seed.extent(0) > 0, has_d = derivs_seed.extent(0) > 0 && Tn > 0;
  KTR_REQUIRE(!has_u || (std::int64_t(u_seed.extent(0)) == N && std::int64_t(u_seed.extent(1)) == m),
              "ktr::Jet::backward",
              "the output seed must be (N, m) = (" + std::to_string(N) + ", " + std::to_string(m) +
                  ") as the forward's output");
  KTR_REQUIRE(!has_d || (std::int64_t(derivs_seed.extent(0)) == N && std::int64_t(derivs_seed.extent(1)) == m &&
                         std::int64_t(derivs_seed.extent(2)) == Tn),
              "ktr::Jet::backward",
              "the derivatives' seed must be (N, m, T) = (" + std::to_string(N) + ", " + std::to_string(m) + ", " +
                  std::to_string(Tn) + ") as the forward's");
  KTR_REQUIRE(grads.extent(0) == 0 || std::int64_t(grads.extent(0)) >= arena_size_, "ktr::Jet::backward",
              "the gradient buffer is smaller than the model's arena");
  KTR_REQUIRE(input_grad.extent(0) == 0 ||
                  (std::int64_t(input_grad.extent(0)) == N && std::int64_t(input_grad.extent(1)) == d),
              "ktr::Jet::backward",
              "the input gradient must be (N, d) = (" + std::to_string(N) + ", " + std::to_string(d) +
                  ") as the forward's points");
  if (N == 0) return;
  int const C = channels_;
  jet::Tables const tables{first_, second_, laps_, pairs_, lap_start_, lap_channels_};
  T* const ga = grad_a_.data();
  T* const gz = grad_z_.data();
  {
    auto channel = token_channel_d_;
    Kokkos::parallel_for(
        "ktr::jet::seed", Range(space, 0, N * m), KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const o = e / N, n = e % N, at = o * C * N + n;
          for (int c = 0; c < C; ++c) ga[at + c * N] = T(0);
          if (has_u) ga[at] = u_seed(n, o);
          if (has_d)
            for (std::int64_t k = 0; k < Tn; ++k) ga[at + channel(k) * N] = derivs_seed(n, o, k);
        });
  }
  T const* const p = params.data();
  T* const g = grads.data();
  bool const want_params = grads.extent(0) > 0, want_input = input_grad.extent(0) > 0;
  for (std::size_t l = acts_.size(); l-- > 0;) {
    std::int64_t const in = widths_[l], out = widths_[l + 1];
    T const* a = acts_buf_.data() + act_offset_[l] * capacity_;
    T const* z = zs_buf_.data() + z_offset_[l] * capacity_;
    with_jet_activation(acts_[l], [&](auto act) {
      jet::activation_backward<T, decltype(act)>(space, tables, N, out, C, z, ga, gz);
    });
    if (want_params) {
      // dW (in, out) += a gz^T over every channel and point; the bias's gradient is the value channel's sum
      jet::product<T>(space, false, true, a, gz, T(1), g + kernel_offset_[l], in, out, C * N, products_.data());
      T* gb = g + bias_offset_[l];
      std::int64_t const stride = C * N;
      Kokkos::parallel_for(
          "ktr::jet::bias_gradient", Range(space, 0, out), KOKKOS_LAMBDA(std::int64_t o) {
            T s = 0;
            for (std::int64_t n = 0; n < N; ++n) s += gz[o * stride + n];
            gb[o] += s;
          });
    }
    if (l > 0 || want_input)  // ga (in, C N) = W gz
      jet::product<T>(space, false, false, p + kernel_offset_[l], gz, T(0), ga, in, C * N, out, products_.data());
  }
  if (want_input) {
    // Only the value channel depends on x: the first channels' scale_i are constants.
    T const* const s = scale_.data();
    bool const scaled = scale_.extent(0) > 0;
    Kokkos::parallel_for(
        "ktr::jet::input_gradient", Range(space, 0, N * d), KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const n = e / d, f = e % d;
          input_grad(n, f) = ga[f * C * N + n] * (scaled ? s[f] : T(1));
        });
  }
}

template class Jet<float>;
template class Jet<double>;

}  // namespace ktr
