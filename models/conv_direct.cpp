// Direct 3x3 convolution (+ bias + activation + optional 2x2 average pool) for few input channels: see
// conv_direct.hpp.
//
// Every kernel works on blocks of P x P output pixels (one pooled output) and a compile-time tile of NV packs of W
// output channels (models/pack.hpp): the (P + 2) x (P + 2) x C input patch is loaded once (zeros outside the
// image), then for each tap and input channel NV weight packs multiply P^2 broadcast inputs into P^2 x NV
// independent accumulators, which the host compiler keeps in vector registers.
#include "conv_direct.hpp"

#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "conv_direct_dpbf16.hpp"
#include "pack.hpp"

#include <type_traits>

namespace ktr::impl {

namespace {

constexpr int max_c = int(conv_direct_max_channels);

// CC: the input channel count if known at compile time (1, the common first layer), else 0.
template <int P, int CC>
struct Patch {
  float v[(P + 2) * (P + 2)][CC > 0 ? CC : max_c];
};

// The input under the P x P output pixels at (h0, w0) of image b, with the SAME padding as zeros.
template <int P, int CC>
KOKKOS_INLINE_FUNCTION void load_patch_as_is(ConvDims const& d, float const* x, std::int64_t b, std::int64_t h0,
                                             std::int64_t w0, Patch<P, CC>& p) {
  std::int64_t const C = CC > 0 ? CC : d.channels;
  if (h0 >= 1 && h0 + P < d.height && w0 >= 1 && w0 + P < d.width) {  // interior: no padding to test for
    float const* src = x + ((b * d.height + h0 - 1) * d.width + w0 - 1) * C;
    for (int r = 0; r < P + 2; ++r)
      for (int s = 0; s < P + 2; ++s)
        for (std::int64_t c = 0; c < C; ++c) p.v[r * (P + 2) + s][c] = src[(r * d.width + s) * C + c];
    return;
  }
  for (int r = 0; r < P + 2; ++r) {
    std::int64_t const hh = h0 + r - 1;
    for (int s = 0; s < P + 2; ++s) {
      std::int64_t const ww = w0 + s - 1;
      bool const inside = hh >= 0 && hh < d.height && ww >= 0 && ww < d.width;
      std::int64_t const at = inside ? ((b * d.height + hh) * d.width + ww) * C : 0;
      for (std::int64_t c = 0; c < C; ++c) p.v[r * (P + 2) + s][c] = inside ? x[at + c] : 0.0f;
    }
  }
}

// The same, rounded to bf16 where the products take bf16 inputs (R).
template <int P, int CC, bool R>
KOKKOS_INLINE_FUNCTION void load_patch(ConvDims const& d, float const* x, std::int64_t b, std::int64_t h0,
                                       std::int64_t w0, Patch<P, CC>& p) {
  load_patch_as_is(d, x, b, h0, w0, p);
  if constexpr (!R) return;
  if constexpr (CC > 0) {  // the channel count known: the patch is one run of floats, rounded in packs of 8
    constexpr int n = (P + 2) * (P + 2) * CC;
    float* const v = &p.v[0][0];
    for (int i = 0; i + 8 <= n; i += 8) Pack<8>::load(v + i).bf16().store(v + i);
    for (int i = n / 8 * 8; i < n; ++i) v[i] = round_to_bf16(v[i]);
  } else {
    for (int r = 0; r < (P + 2) * (P + 2); ++r)
      for (std::int64_t c = 0; c < d.channels; ++c) p.v[r][c] = round_to_bf16(p.v[r][c]);
  }
}

// z[j][q][u] = b[f0 + .] + sum_{kh, kw, c} x[pixel q of patch j + (kh - 1, kw - 1), c] w[kh, kw, c, f0 + .] for JB
// patches j side by side (each weight pack loaded once for all of them), their P x P pixels q (row-major) and the
// NV packs u of W channels from f0.
template <int P, int W, int NV, int CC, int JB>
KOKKOS_INLINE_FUNCTION void conv_blocks(ConvDims const& d, Patch<P, CC> const* p, float const* w,
                                        float const* bias, std::int64_t f0, Pack<W> (*z)[P * P][NV]) {
  std::int64_t const C = CC > 0 ? CC : d.channels;
  for (int u = 0; u < NV; ++u) {
    Pack<W> const b = Pack<W>::load(bias + f0 + u * W);
    for (int j = 0; j < JB; ++j)
      for (int q = 0; q < P * P; ++q) z[j][q][u] = b;
  }
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw)
      for (std::int64_t c = 0; c < C; ++c) {
        float const* wk = w + ((kh * 3 + kw) * C + c) * d.features + f0;
        Pack<W> wv[NV];
        for (int u = 0; u < NV; ++u) wv[u] = Pack<W>::load(wk + u * W);  // rounded already under bf16
        for (int j = 0; j < JB; ++j)
          for (int q = 0; q < P * P; ++q) {
            float const xv = p[j].v[(q / P + kh) * (P + 2) + q % P + kw][c];
            for (int u = 0; u < NV; ++u) z[j][q][u].fma(xv, wv[u]);
          }
      }
}

// s += act(z), element-wise (ReLU and identity as vector operations; others a lane at a time).
template <class A, int W>
KOKKOS_INLINE_FUNCTION void add_activated(Pack<W>& s, Pack<W> const& z) {
  if constexpr (std::is_same<A, Act<Activation::relu>>::value) {
    s.add_relu(z);
  } else if constexpr (std::is_same<A, Act<Activation::identity>>::value) {
    s.add(z);
  } else {
    float t[W];
    z.store(t);
    for (int i = 0; i < W; ++i) t[i] = A::forward(t[i]);
    s.add(Pack<W>::load(t));
  }
}

// act'(z) g, element-wise.
template <class A, int W>
KOKKOS_INLINE_FUNCTION Pack<W> activation_grad(Pack<W> const& z, Pack<W> const& g) {
  if constexpr (std::is_same<A, Act<Activation::relu>>::value) {
    return Pack<W>::where_positive(z, g);
  } else if constexpr (std::is_same<A, Act<Activation::identity>>::value) {
    return g;
  } else {
    float zt[W], gt[W];
    z.store(zt);
    g.store(gt);
    for (int i = 0; i < W; ++i) gt[i] = A::backward(gt[i], zt[i], A::forward(zt[i]));
    return Pack<W>::load(gt);
  }
}

template <int P, int W, int NV, int CC, class A, bool R>
void forward_impl(ExecSpace const& space, ConvDims const& d, float const* x, float const* w, float const* b,
                  float* y) {
  // Two outputs side by side where the registers hold both's accumulators (2 P^2 NV packs of 16 floats).
  constexpr int JB = NV * W > 16 ? 2 : 1;
  std::int64_t const Ho = d.out_height(), Wo = d.out_width(), F = d.features;
  float const scale = 1.0f / float(P * P);
  Kokkos::parallel_for(
      "ktr::conv2d::direct_forward",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, d.batch * Ho),
      KOKKOS_LAMBDA(std::int64_t row) {
        std::int64_t const n = row / Ho, i = row % Ho;
        for (std::int64_t j0 = 0; j0 < Wo; j0 += JB) {
          int const nj = j0 + JB <= Wo ? JB : int(Wo - j0);
          Patch<P, CC> p[JB];
          for (int jj = 0; jj < JB; ++jj)
            load_patch<P, CC, R>(d, x, n, i * P, (jj < nj ? j0 + jj : j0) * P, p[jj]);
          for (std::int64_t f0 = 0; f0 < F; f0 += W * NV) {
            Pack<W> z[JB][P * P][NV];
            conv_blocks<P, W, NV, CC, JB>(d, p, w, b, f0, z);
            for (int jj = 0; jj < nj; ++jj) {
              float* out = y + (row * Wo + j0 + jj) * F;
              for (int u = 0; u < NV; ++u) {
                Pack<W> s = Pack<W>::zero();
                for (int q = 0; q < P * P; ++q) add_activated<A>(s, z[jj][q][u]);
                s.scaled(scale).store(out + f0 + u * W);
              }
            }
          }
        }
      });
}

// Per chunk of rows and tile of NV * W channels, in blocks of `block` output positions: first d loss / d z of the
// block's pixels (recomputing z: P^2 x NV accumulators), then, one pack at a time, the 9 taps' kernel-gradient
// accumulators over the block (9 packs in registers), so neither phase runs out of vector registers.
template <int P, int W, int NV, int CC, class A, bool R>
void backward_impl(ExecSpace const& space, ConvDims const& d, float const* x, float const* w, float const* b,
                   float const* dy, float* partials, float* dz) {
  constexpr int block = NV * W > 16 ? 2 : 4;  // block * P^2 * NV accumulator packs in registers
  std::int64_t const H = d.height, Wd = d.width, C = CC > 0 ? CC : d.channels, F = d.features;
  std::int64_t const Ho = d.out_height(), Wo = d.out_width(), ps = d.partial_size();
  std::int64_t const rows = conv_direct_rows_per_chunk(d), per_image = (Ho + rows - 1) / rows;
  float const scale = 1.0f / float(P * P);
  // FIXME_CUDA: the gradient tile lives in thread-local memory; a team-scratch version would suit a GPU better.
  Kokkos::parallel_for(
      "ktr::conv2d::direct_backward",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, d.batch * per_image),
      KOKKOS_LAMBDA(std::int64_t chunk) {
        std::int64_t const n = chunk / per_image, i0 = chunk % per_image * rows;
        std::int64_t const i1 = i0 + rows < Ho ? i0 + rows : Ho;
        float* part = partials + chunk * ps;
        for (std::int64_t f0 = 0; f0 < F; f0 += W * NV) {
          Pack<W> gw[9 * max_c][NV], gb[NV];
          for (int u = 0; u < NV; ++u) {
            gb[u] = Pack<W>::zero();
            for (std::int64_t k = 0; k < 9 * C; ++k) gw[k][u] = Pack<W>::zero();
          }
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j0 = 0; j0 < Wo; j0 += block) {
              int const nj = j0 + block < Wo ? block : int(Wo - j0);
              Patch<P, CC> p[block];
              Pack<W> g[block][P * P][NV];  // z, then d loss / d z
              for (int jj = 0; jj < nj; ++jj) {
                std::int64_t const j = j0 + jj;
                load_patch<P, CC, R>(d, x, n, i * P, j * P, p[jj]);
                conv_blocks<P, W, NV, CC, 1>(d, &p[jj], w, b, f0, &g[jj]);
                float const* up = dy + ((n * Ho + i) * Wo + j) * F + f0;
                for (int u = 0; u < NV; ++u) {
                  Pack<W> const gu = Pack<W>::load(up + u * W).scaled(scale);
                  for (int q = 0; q < P * P; ++q) g[jj][q][u] = activation_grad<A>(g[jj][q][u], gu);
                  if constexpr (R)  // d loss / d z as the products' bf16 input (and so the input gradient's)
                    for (int q = 0; q < P * P; ++q) g[jj][q][u] = g[jj][q][u].bf16();
                }
                if (dz != nullptr)
                  for (int q = 0; q < P * P; ++q)
                    for (int u = 0; u < NV; ++u)
                      g[jj][q][u].store(dz + ((n * H + i * P + q / P) * Wd + j * P + q % P) * F + f0 + u * W);
              }
              for (int u = 0; u < NV; ++u) {
                for (int jj = 0; jj < nj; ++jj)
                  for (int q = 0; q < P * P; ++q) gb[u].add(g[jj][q][u]);
                for (std::int64_t c = 0; c < C; ++c) {
                  Pack<W> acc[9];
                  for (int k = 0; k < 9; ++k) acc[k] = gw[k * C + c][u];
                  for (int jj = 0; jj < nj; ++jj)
                    for (int q = 0; q < P * P; ++q)
                      for (int kh = 0; kh < 3; ++kh)
                        for (int kw = 0; kw < 3; ++kw)
                          acc[kh * 3 + kw].fma(p[jj].v[(q / P + kh) * (P + 2) + q % P + kw][c], g[jj][q][u]);
                  for (int k = 0; k < 9; ++k) gw[k * C + c][u] = acc[k];
                }
              }
            }
          for (int u = 0; u < NV; ++u) {
            for (std::int64_t k = 0; k < 9 * C; ++k) gw[k][u].store(part + k * F + f0 + u * W);
            gb[u].store(part + 9 * C * F + f0 + u * W);
          }
        }
      });
}

// Pixels a VALID pool drops (a trailing odd row or column) get no gradient.
void zero_dropped(ExecSpace const& space, ConvDims const& d, float* dz) {
  std::int64_t const H = d.height, W = d.width, F = d.features;
  std::int64_t const Hk = d.out_height() * d.pool, Wk = d.out_width() * d.pool;
  if (Hk == H && Wk == W) return;
  Kokkos::parallel_for(
      "ktr::conv2d::direct_zero_dropped", MDRange<3>(space, {0, 0, 0}, {d.batch, H, W}),
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t h, std::int64_t v) {
        if (h < Hk && v < Wk) return;
        for (std::int64_t f = 0; f < F; ++f) dz[((n * H + h) * W + v) * F + f] = 0.0f;
      });
}

}  // namespace

bool conv_direct_takes(Activation act, std::int64_t features) {
  return act == Activation::relu || act == Activation::identity || features % 8 == 0;
}

std::int64_t conv_direct_rows_per_chunk(ConvDims const& d) {
  std::int64_t const rows = device_is_host ? d.out_height() : 1;
  return rows > 0 ? rows : 1;
}

std::int64_t conv_direct_chunks(ConvDims const& d) {
  std::int64_t const rows = conv_direct_rows_per_chunk(d);
  return d.batch * ((d.out_height() + rows - 1) / rows);
}

namespace {

// Full: every tile and the single-channel specialisation (ReLU and identity, the forms models train with most);
// otherwise 8-wide tiles of a multiple of 8 output channels and any input channel count, so that each further
// activation adds four kernels (conv_direct_takes says which layers the direct kernels take).
template <int P, int W, int NV, bool Full, class Body>
void with_channels(ConvDims const& d, Body const& body) {
  if constexpr (W > 1 && Full)
    if (d.channels == 1) return body.template operator()<P, W, NV, 1>();
  body.template operator()<P, W, NV, 0>();
}

template <int W, int NV, bool Full, class Body>
void with_pool(ConvDims const& d, Body const& body) {
  d.pool == 2 ? with_channels<2, W, NV, Full>(d, body) : with_channels<1, W, NV, Full>(d, body);
}

// Runs body.template operator()<P, W, NV, CC>() with the pool factor, a channel tile of NV packs of W (W the
// host's widest pack, host_pack_width, where it divides F, else 8, else 1; NV * W up to Tile) and the channel
// count when it is 1; not Full: W = 8 (F a multiple of 8) and NV = 1.
template <int Tile, bool Full, class Body>
void dispatch(ConvDims const& d, Body const& body) {
  KTR_REQUIRE(d.channels <= conv_direct_max_channels, "ktr::conv2d::direct",
              "at most " + std::to_string(conv_direct_max_channels) + " input channels");
  KTR_REQUIRE(d.pool == 1 || d.pool == 2, "ktr::conv2d::direct", "pool must be 1 or 2");
  constexpr int V = host_pack_width;
  if constexpr (Full) {
    if constexpr (Tile > V)
      if (d.features % Tile == 0) return with_pool<V, Tile / V, Full>(d, body);
    if (d.features % V == 0) return with_pool<V, 1, Full>(d, body);
  }
  if (d.features % 8 == 0) return with_pool<8, 1, Full>(d, body);
  KTR_REQUIRE(Full, "ktr::conv2d::direct", "this activation needs a multiple of 8 output channels");
  if constexpr (Full) with_pool<1, 1, Full>(d, body);
}

template <class A>
constexpr bool full_forms() {
  return std::is_same<A, Act<Activation::relu>>::value || std::is_same<A, Act<Activation::identity>>::value;
}

template <class A, bool R>
struct Forward {
  ExecSpace const& space;
  ConvDims const& d;
  float const *x, *w, *b;
  float* y;
  template <int P, int W, int NV, int CC>
  void operator()() const {
    forward_impl<P, W, NV, CC, A, R>(space, d, x, w, b, y);
  }
};
template <class A, bool R>
struct Backward {
  ExecSpace const& space;
  ConvDims const& d;
  float const *x, *w, *b;
  float const* dy;
  float *partials, *dz;
  template <int P, int W, int NV, int CC>
  void operator()() const {
    backward_impl<P, W, NV, CC, A, R>(space, d, x, w, b, dy, partials, dz);
  }
};
// Under bf16, the AVX512-BF16 kernels' operands follow the rounded weights in conv_direct_operands' buffer.
template <class T>
auto dpbf16_operands(ConvDims const& d, T* w16) {
  using U = std::conditional_t<std::is_const<T>::value, std::uint32_t const, std::uint32_t>;
  return reinterpret_cast<U*>(w16 + 9 * d.channels * d.features);
}
}  // namespace

std::int64_t conv_direct_operands_size(ConvDims const& d) {
  // Whatever the precision and CPU now (a scope may change the first, tests switch the AVX512-BF16 kernels off):
  // a single input channel may take the AVX512-BF16 kernels.
  return 9 * d.channels * d.features + (d.channels == 1 ? conv_dpbf16_scratch_size(d) : 0);
}

float const* conv_direct_operands(ExecSpace const& space, Operand operand, ConvDims const& d, Activation act,
                                  float const* x, float const* w, float* w16) {
  if (operand != Operand::bf16) return w;
  Kokkos::parallel_for(
      "ktr::conv2d::direct_weights_bf16",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, 9 * d.channels * d.features),
      KOKKOS_LAMBDA(std::int64_t i) { w16[i] = round_to_bf16(w[i]); });
  if (conv_dpbf16_takes(d, act)) conv_dpbf16_prepare(space, d, x, w, dpbf16_operands(d, w16));
  return w16;
}

// The kernels are instantiated once per activation, for host builds only (GPU builds take im2col + gemm).
void conv_direct_forward(ExecSpace const& space, Operand operand, ConvDims const& d, float const* x,
                         float const* w, float const* b, Activation act, float* y, float* w16) {
  KTR_REQUIRE(device_is_host, "ktr::conv2d::direct", "the direct kernels run on host builds only");
  bool const bf16 = operand == Operand::bf16;
  if (bf16 && conv_dpbf16_takes(d, act)) return conv_dpbf16_forward(space, d, dpbf16_operands(d, w16), b, act, y);
  // Two packs per pixel: 2 P^2 accumulators fit the vector registers.
  host_builds_only([&](auto) {
    with_activation(act, [&](auto a) {
      using A = decltype(a);
      if (bf16)
        dispatch<2 * host_pack_width, full_forms<A>()>(d, Forward<A, true>{space, d, x, w, b, y});
      else
        dispatch<2 * host_pack_width, full_forms<A>()>(d, Forward<A, false>{space, d, x, w, b, y});
    });
  });
}

void conv_direct_backward(ExecSpace const& space, Operand operand, ConvDims const& d, float const* x,
                          float const* w, float const* b, Activation act, float const* dy, float* dw, float* db,
                          float* partials, float* dz) {
  KTR_REQUIRE(device_is_host, "ktr::conv2d::direct", "the direct kernels run on host builds only");
  if (dz != nullptr) zero_dropped(space, d, dz);
  bool const bf16 = operand == Operand::bf16;
  if (bf16 && conv_dpbf16_takes(d, act)) {
    conv_dpbf16_backward(space, d, dpbf16_operands(d, w), act, dy, partials, dz);
  } else {
    // Two packs per pixel as well; backward_impl takes blocks of 2 positions when they are 16-float packs, so a
    // block's d loss / d z (block x P^2 x 2 packs) stays in registers.
    host_builds_only([&](auto) {
      with_activation(act, [&](auto a) {
        using A = decltype(a);
        if (bf16)
          dispatch<2 * host_pack_width, full_forms<A>()>(d,
                                                         Backward<A, true>{space, d, x, w, b, dy, partials, dz});
        else
          dispatch<2 * host_pack_width, full_forms<A>()>(d,
                                                         Backward<A, false>{space, d, x, w, b, dy, partials, dz});
      });
    });
  }
  // dw, db = the chunks' partials summed in chunk order: deterministic, whatever ran where.
  std::int64_t const chunks = conv_direct_chunks(d), ps = d.partial_size(), nw = 9 * d.channels * d.features;
  Kokkos::parallel_for(
      "ktr::conv2d::direct_reduce", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, ps),
      KOKKOS_LAMBDA(std::int64_t e) {
        float s = 0.0f;
        for (std::int64_t k = 0; k < chunks; ++k) s += partials[k * ps + e];
        if (e < nw)
          dw[e] = s;
        else
          db[e - nw] = s;
      });
}

void conv_direct_input_grad(ExecSpace const& space, ConvDims const& d, float const* dz, float const* w,
                            float* dx) {
  std::int64_t const H = d.height, W = d.width, C = d.channels, F = d.features;
  Kokkos::parallel_for(
      "ktr::conv2d::direct_input_grad", MDRange<3>(space, {0, 0, 0}, {d.batch, H, W}),
      KOKKOS_LAMBDA(std::int64_t n, std::int64_t h, std::int64_t v) {
        float* out = dx + ((n * H + h) * W + v) * C;
        for (std::int64_t c = 0; c < C; ++c) out[c] = 0.0f;
        for (int kh = 0; kh < 3; ++kh) {
          std::int64_t const oh = h - kh + 1;
          if (oh < 0 || oh >= H) continue;
          for (int kw = 0; kw < 3; ++kw) {
            std::int64_t const ow = v - kw + 1;
            if (ow < 0 || ow >= W) continue;
            float const* g = dz + ((n * H + oh) * W + ow) * F;
            for (std::int64_t c = 0; c < C; ++c) {
              float const* wk = w + ((kh * 3 + kw) * C + c) * F;
              float s = 0.0f;  // under bf16, dz and w are rounded already (backward_impl, conv_direct_operands)
              for (std::int64_t f = 0; f < F; ++f) s += g[f] * wk[f];
              out[c] += s;
            }
          }
        }
      });
}

}  // namespace ktr::impl
