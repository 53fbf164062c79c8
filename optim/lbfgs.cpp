// L-BFGS's kernels: reductions into device doubles, one-thread decisions, masked updates over the arena.
#include "lbfgs.hpp"

#include "../backends/kokkos_compat.hpp"
#include "optimizer.hpp"

#include <cfloat>

namespace ktr {

namespace {

using L = Lbfgs;
using Accumulator = Kokkos::View<double, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
constexpr std::int64_t kChunk = device_is_host ? 4096 : 1;
constexpr double kC1 = 1e-4, kC2 = 0.9;  // sufficient decrease, curvature (Nocedal & Wright's, PyTorch's)

std::int64_t chunks(std::int64_t n) { return (n + kChunk - 1) / kChunk; }

// out = sum over i of a[i] * b[i] (b null: a[i] * a[i]); 0 where the device flag `on` (if any) is 0.
void dot(char const* label, ExecSpace const& space, std::int64_t n, float const* a, float const* b,
         float const* on, Accumulator const& out) {
  Kokkos::parallel_reduce(
      label, Range(space, 0, chunks(n)),
      KOKKOS_LAMBDA(std::int64_t c, double& sum) {
        if (on && *on == 0.0f) return;
        std::int64_t const end = c * kChunk + kChunk < n ? c * kChunk + kChunk : n;
        double t = 0;
        for (std::int64_t i = c * kChunk; i < end; ++i) t += double(a[i]) * double(b ? b[i] : a[i]);
        sum += t;
      },
      out);
}

// out = max |a[i]|, or with `l1` sum |a[i]|; nothing meaningful where `on` (if any) is 0.
void norm(char const* label, ExecSpace const& space, std::int64_t n, float const* a, float const* on, bool l1,
          Accumulator const& out) {
  auto body = KOKKOS_LAMBDA(std::int64_t c, double& r) {
    if (on && *on == 0.0f) return;
    std::int64_t const end = c * kChunk + kChunk < n ? c * kChunk + kChunk : n;
    for (std::int64_t i = c * kChunk; i < end; ++i) {
      double const v = a[i] < 0 ? -double(a[i]) : double(a[i]);
      if (l1)
        r += v;
      else
        r = v > r ? v : r;
    }
  };
  if (l1)
    Kokkos::parallel_reduce(label, Range(space, 0, chunks(n)), body, out);
  else
    Kokkos::parallel_reduce(label, Range(space, 0, chunks(n)), body, Kokkos::Max<double, MemSpace>(out));
}

// body(begin, end) over the arena, chunk by chunk, where the device flag `on` is not 0.
template <class Body>
void masked_for(char const* label, ExecSpace const& space, std::int64_t n, float const* on, Body const& body) {
  Kokkos::parallel_for(
      label, Range(space, 0, chunks(n)), KOKKOS_LAMBDA(std::int64_t c) {
        if (*on == 0.0f) return;
        body(c * kChunk, c * kChunk + kChunk < n ? c * kChunk + kChunk : n);
      });
}

// out = sum over i of a[oa + i] * b[ob + i] for offsets into the ring that `offsets(oa, ob)` reads from the
// device's scalars; 0 where the device flag `on` is 0 or `offsets` returns false.
template <class Offsets>
void ring_dot(char const* label, ExecSpace const& space, std::int64_t n, float const* a, float const* b,
              float const* on, Offsets const& offsets, Accumulator const& out) {
  Kokkos::parallel_reduce(
      label, Range(space, 0, chunks(n)),
      KOKKOS_LAMBDA(std::int64_t c, double& sum) {
        std::int64_t oa = 0, ob = 0;
        if (*on == 0.0f || !offsets(oa, ob)) return;
        std::int64_t const end = c * kChunk + kChunk < n ? c * kChunk + kChunk : n;
        for (std::int64_t i = c * kChunk; i < end; ++i) sum += double(a[oa + i]) * double(b[ob + i]);
      },
      out);
}

// The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within [lo, hi] (PyTorch's
// _cubic_interpolate); the middle of [lo, hi] where the cubic has none.
KOKKOS_INLINE_FUNCTION double cubic_minimum(double x1, double f1, double g1, double x2, double f2, double g2,
                                            double lo, double hi) {
  double const d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  double const d2_square = d1 * d1 - g1 * g2;
  if (!(d2_square >= 0) || x1 == x2) return 0.5 * (lo + hi);
  double const d2 = compat::sqrt(d2_square);
  double const at = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                             : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  if (!(at == at)) return 0.5 * (lo + hi);
  return at < lo ? lo : (at > hi ? hi : at);
}

// The ring slot of the j-th newest pair.
KOKKOS_INLINE_FUNCTION int ring_slot(float const* s, int j, int m) {
  return (int(s[L::kHead]) - 1 - j + 2 * m) % m;
}

}  // namespace

Lbfgs::Lbfgs(OptimizerConfig const& c, std::int64_t size, ExecSpace const& space)
    : m_(c.history),
      lr_(c.lr),
      tol_grad_(c.tolerance_grad),
      tol_change_(c.tolerance_change),
      max_trials_(c.linesearch),
      n_(size),
      x0_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_x0"), std::size_t(size)),
      g0_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_g0"), std::size_t(size)),
      d_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_d"), std::size_t(size)),
      pairs_s_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_s"), std::size_t(size * c.history)),
      pairs_y_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_y"), std::size_t(size * c.history)),
      rho_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_rho"), std::size_t(c.history)),
      s_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_scalars"), std::size_t(kScalars)),
      dots_(Kokkos::view_alloc(space, "ktr::optim::lbfgs_dots"), std::size_t(8 + 2 * c.history)) {}

std::vector<DeviceView<float*>> Lbfgs::state() const { return {x0_, g0_, d_, pairs_s_, pairs_y_, rho_, s_}; }

void Lbfgs::evaluate(ExecSpace const& space, DeviceView<float*> const& params,
                     DeviceView<const float*> const& grads, float const* loss,
                     Kokkos::View<std::int64_t, MemSpace> const& step,
                     Kokkos::View<std::int64_t, MemSpace> const& refused) const {
  std::int64_t const n = n_;
  int const m = m_;
  float* const x = params.data();
  float const* const g = grads.data();
  float* const x0 = x0_.data();
  float* const g0 = g0_.data();
  float* const d = d_.data();
  float* const ps = pairs_s_.data();
  float* const py = pairs_y_.data();
  float* const rho = rho_.data();
  float* const s = s_.data();
  auto const dots = dots_;
  auto at = [&](int i) { return Accumulator(dots_.data() + i); };
  float const* const accept = s + kAccept;
  float const* const record = s + kRecord;

  // What the evaluation says: its slope along d, and the gradient's norms.
  dot("ktr::optim::lbfgs_slope", space, n, g, d, nullptr, at(0));
  dot("ktr::optim::lbfgs_grad_sq", space, n, g, nullptr, nullptr, at(1));
  norm("ktr::optim::lbfgs_grad_max", space, n, g, nullptr, false, at(2));
  norm("ktr::optim::lbfgs_grad_l1", space, n, g, nullptr, true, at(3));

  float const lr = lr_, tol_grad = tol_grad_, tol_change = tol_change_;
  int const max_trials = max_trials_;
  auto refused_count = refused;
  auto steps = step;
  Kokkos::parallel_for(
      "ktr::optim::lbfgs_decide", Range(space, 0, 1), KOKKOS_LAMBDA(std::int64_t) {
        double const f = double(*loss), gd = dots(0), gsq = dots(1), gmax = dots(2);
        bool const finite = f - f == 0.0 && gsq - gsq == 0.0;
        int const phase = int(s[kPhase]);
        bool accept = false, keep = false, move = false;
        s[kAccept] = s[kRecord] = s[kReset] = s[kMove] = 0.0f;
        if (phase == 3) {  // converged: an evaluation, nothing moves
          steps() += 1;
          return;
        }
        if (!finite && phase != 1) {  // no point to fall back on: refused
          refused_count() += 1;
          return;
        }
        steps() += 1;
        double alpha = s[kAlpha];
        bool end_search = false;
        if (phase == 0) {
          accept = true;
        } else if (phase == 2) {
          accept = keep = true;
        } else {
          double const f0 = s[kF0], gd0 = s[kGd0];
          double lo_a = s[kLoAlpha], lo_f = s[kLoF], lo_g = s[kLoGd];
          double hi_a = s[kHiAlpha], hi_f = s[kHiF], hi_g = s[kHiGd];
          bool bracketed = s[kBracketed] != 0.0f;
          int const evals = int(s[kEvals]) + 1;
          s[kEvals] = float(evals);
          bool zoom = false;
          if (!finite) {  // too far: the bracket's far end, halfway back
            hi_a = alpha, hi_f = FLT_MAX, hi_g = 0, bracketed = true;
            alpha = 0.5 * (lo_a + alpha);
          } else {
            bool const too_high = f > f0 + kC1 * alpha * gd0 || (bracketed || evals > 1 ? f >= lo_f : false);
            bool const flat = (gd < 0 ? -gd : gd) <= -kC2 * gd0;
            if (too_high) {
              hi_a = alpha, hi_f = f, hi_g = gd, bracketed = zoom = true;
            } else if (flat) {
              accept = keep = true;
            } else if (bracketed || gd >= 0) {
              if (!bracketed || gd * (hi_a - lo_a) >= 0) hi_a = lo_a, hi_f = lo_f, hi_g = lo_g;
              lo_a = alpha, lo_f = f, lo_g = gd, bracketed = zoom = true;
            } else {  // still descending: extrapolate beyond
              double const pa = lo_a, pf = lo_f, pg = lo_g;
              lo_a = alpha, lo_f = f, lo_g = gd;
              alpha = cubic_minimum(pa, pf, pg, alpha, f, gd, alpha + 0.01 * (alpha - pa), 10 * alpha);
            }
          }
          if (zoom) {
            double const a = lo_a < hi_a ? lo_a : hi_a, b = lo_a < hi_a ? hi_a : lo_a, w = b - a;
            alpha = cubic_minimum(lo_a, lo_f, lo_g, hi_a, hi_f, hi_g, a + 0.1 * w, b - 0.1 * w);
            end_search = w * double(s[kDmax]) < tol_change;
          }
          s[kLoAlpha] = float(lo_a), s[kLoF] = float(lo_f), s[kLoGd] = float(lo_g);
          s[kHiAlpha] = float(hi_a), s[kHiF] = float(hi_f), s[kHiGd] = float(hi_g);
          s[kBracketed] = bracketed ? 1.0f : 0.0f;
          if (!accept && (end_search || evals >= max_trials)) {
            if (lo_a > 0) {  // settle on the best point, accepted when it has been evaluated again
              s[kPhase] = 2.0f, alpha = lo_a;
            } else {  // no decrease along d: back to x0, then along -g (converged if that was -g)
              s[kPhase] = s[kCount] == 0.0f ? 3.0f : 0.0f;
              s[kCount] = 0.0f, s[kHead] = 0.0f, alpha = 0;
            }
          }
          move = !accept;
        }
        if (accept) {
          double const f0 = s[kF0];
          bool const converged =
              gmax <= tol_grad || (keep && ((f - f0 < 0 ? f0 - f : f - f0) < tol_change ||
                                            (alpha < 0 ? -alpha : alpha) * double(s[kDmax]) < tol_change));
          s[kIterations] += 1.0f;
          s[kF0] = float(f);
          if (converged) {
            s[kPhase] = 3.0f;
            accept = keep = false;
          }
        }
        s[kAlpha] = float(alpha);
        s[kAccept] = accept ? 1.0f : 0.0f;
        s[kRecord] = keep ? 1.0f : 0.0f;
        s[kMove] = move ? 1.0f : 0.0f;
      });

  // A kept step: its pair into the ring, counted where its curvature y.s is positive.
  masked_for(
      "ktr::optim::lbfgs_pair", space, n, record, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        std::int64_t const slot = std::int64_t(s[kHead]) * n;
        for (std::int64_t i = begin; i < end; ++i) ps[slot + i] = x[i] - x0[i], py[slot + i] = g[i] - g0[i];
      });
  // The ring's head slot is known on the device only: its offset is read there.
  auto head = KOKKOS_LAMBDA(std::int64_t & oa, std::int64_t & ob) {
    oa = ob = std::int64_t(s[kHead]) * n;
    return true;
  };
  ring_dot("ktr::optim::lbfgs_curvature", space, n, ps, py, record, head, at(4));
  ring_dot("ktr::optim::lbfgs_y_sq", space, n, py, py, record, head, at(5));
  Kokkos::parallel_for(
      "ktr::optim::lbfgs_keep", Range(space, 0, 1), KOKKOS_LAMBDA(std::int64_t) {
        double const ys = dots(4), yy = dots(5);
        if (s[kRecord] == 0.0f || !(ys > 1e-10) || !(yy > 0)) return;
        int const head = int(s[kHead]);
        rho[head] = float(1.0 / ys);
        s[kGamma] = float(ys / yy);
        s[kHead] = float((head + 1) % m);
        s[kCount] = float(int(s[kCount]) + 1 < m ? int(s[kCount]) + 1 : m);
      });

  // The two-loop recursion, q = g to d = -H g, over pairs newest to oldest and back.
  masked_for(
      "ktr::optim::lbfgs_q", space, n, accept, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) d[i] = g[i];
      });
  for (int j = 0; j < m; ++j) {
    auto pair_j = KOKKOS_LAMBDA(std::int64_t & oa, std::int64_t & ob) {
      oa = std::int64_t(ring_slot(s, j, m)) * n, ob = 0;
      return j < int(s[kCount]);
    };
    ring_dot("ktr::optim::lbfgs_loop_dot", space, n, ps, d, accept, pair_j, at(6 + j));
    masked_for(
        "ktr::optim::lbfgs_loop_axpy", space, n, accept, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
          if (j >= int(s[kCount])) return;
          int const p = ring_slot(s, j, m);
          std::int64_t const slot = std::int64_t(p) * n;
          float const a = float(double(rho[p]) * dots(6 + j));
          for (std::int64_t i = begin; i < end; ++i) d[i] -= a * py[slot + i];
        });
  }
  masked_for(
      "ktr::optim::lbfgs_scale", space, n, accept, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        float const gamma = s[kCount] > 0.0f ? s[kGamma] : 1.0f;
        for (std::int64_t i = begin; i < end; ++i) d[i] *= gamma;
      });
  for (int j = m - 1; j >= 0; --j) {
    auto pair_j = KOKKOS_LAMBDA(std::int64_t & oa, std::int64_t & ob) {
      oa = std::int64_t(ring_slot(s, j, m)) * n, ob = 0;
      return j < int(s[kCount]);
    };
    ring_dot("ktr::optim::lbfgs_loop_dot", space, n, py, d, accept, pair_j, at(6 + m + j));
    masked_for(
        "ktr::optim::lbfgs_loop_axpy", space, n, accept, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
          if (j >= int(s[kCount])) return;
          int const p = ring_slot(s, j, m);
          std::int64_t const slot = std::int64_t(p) * n;
          float const b = float(double(rho[p]) * (dots(6 + j) - dots(6 + m + j)));
          for (std::int64_t i = begin; i < end; ++i) d[i] += b * ps[slot + i];
        });
  }

  // The new direction d = -q from x0 = x, g0 = g; its slope decides whether it descends.
  masked_for(
      "ktr::optim::lbfgs_start", space, n, accept, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) d[i] = -d[i], x0[i] = x[i], g0[i] = g[i];
      });
  dot("ktr::optim::lbfgs_slope", space, n, g, d, accept, at(6 + 2 * m));
  norm("ktr::optim::lbfgs_dir_max", space, n, d, accept, false, at(7 + 2 * m));
  Kokkos::parallel_for(
      "ktr::optim::lbfgs_direction", Range(space, 0, 1), KOKKOS_LAMBDA(std::int64_t) {
        if (s[kAccept] == 0.0f) return;
        double gd0 = dots(6 + 2 * m), dmax = dots(7 + 2 * m);
        if (!(gd0 < 0)) {  // not a descent direction: drop the history, go along -g
          s[kCount] = 0.0f, s[kHead] = 0.0f, s[kReset] = 1.0f;
          gd0 = -dots(1), dmax = dots(2);
        }
        double const l1 = dots(3);
        double const first = s[kCount] == 0.0f ? (l1 > 1 ? 1 / l1 : 1.0) * lr : lr;
        s[kGd0] = float(gd0), s[kDmax] = float(dmax);
        s[kPhase] = 1.0f, s[kEvals] = 0.0f, s[kBracketed] = 0.0f;
        s[kLoAlpha] = 0.0f, s[kLoF] = s[kF0], s[kLoGd] = float(gd0);
        s[kHiAlpha] = 0.0f, s[kHiF] = s[kF0], s[kHiGd] = float(gd0);
        s[kAlpha] = float(first), s[kMove] = 1.0f;
      });
  masked_for(
      "ktr::optim::lbfgs_steepest", space, n, s + kReset, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) d[i] = -g[i];
      });
  masked_for(
      "ktr::optim::lbfgs_move", space, n, s + kMove, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        float const alpha = s[kAlpha];
        for (std::int64_t i = begin; i < end; ++i) x[i] = x0[i] + alpha * d[i];
      });
}

}  // namespace ktr
