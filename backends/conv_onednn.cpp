// Convolutions on hosts through oneDNN's primitives: forward, backward-data and backward-weights, NHWC
// activations read and written in place, ktr's HWIO kernel reordered into (and the kernel gradient out of) the
// layout the primitive prefers, one primitive per shape created once and kept, scratchpads in buffers ktr owns, so
// that a step allocates nothing once every shape has run. bf16 (where oneDNN runs bf16 matmuls: AVX512-BF16 or
// AMX): the activations rounded to bf16 in buffers ktr owns, the kernel rounded by its reorder, fp32 accumulation
// and fp32 outputs and gradients. A forward may take its layer's bias and relu / leaky_relu as post-ops (one pass
// over the output fewer; the same bits).
#include "conv.hpp"

#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "gemm_onednn.hpp"
#include "region.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace ktr {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

enum class Op { forward, backward_data, backward_weights };

// What a forward fuses: nothing (-1), or the bias then ConvEpilogue::Act (its int) with its slope.
struct Fused {
  int act = -1;
  float slope = 0;
  explicit Fused(ConvEpilogue const& e = {})
      : act(e.bias == nullptr ? -1 : int(e.act)), slope(e.act == ConvEpilogue::Act::leaky_relu ? e.slope : 0) {}
  bool any() const { return act >= 0; }
};

using Key = std::tuple<int, bool, int, float, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

Key key_of(Op op, bool bf16, Fused const& f, ConvShape const& s) {
  return Key{int(op),    bf16,     f.act,    f.slope,   s.batch,    s.height,     s.width,    s.channels,
             s.features, s.kernel, s.stride, s.pad_top, s.pad_left, s.pad_bottom, s.pad_right};
}

// A primitive with its memory objects (handles swapped per call) and, where the primitive prefers another layout
// for the kernel (or its gradient), the reorder between it and ktr's HWIO and the buffer holding it.
struct Entry {
  dnnl::primitive primitive;
  dnnl::memory a, b, c, scratch;  // forward: src, weights, dst; data: diff_dst, weights, diff_src; weights: src,
                                  // diff_dst, diff_weights
  dnnl::memory bias;              // a forward that fuses its layer's bias (and activation)
  dnnl::memory user_kernel;       // ktr's HWIO kernel (or its gradient)
  dnnl::reorder kernel_reorder;   // HWIO -> the primitive's (forward, data) or back (weights)
  bool reorders = false;
  HostView<char*> kernel_buffer;  // the kernel in the primitive's layout
  ConvShape shape;                // what it convolves (for the profiling region's label)
  bool bf16 = false;
};

class OneDnnConv {
 public:
  static OneDnnConv& get() {
    static OneDnnConv* one = new OneDnnConv;  // never destroyed: oneDNN's state may outlive static destructors
    return *one;
  }

  void forward(ExecSpace const& space, bool bf16, ConvShape const& s, float const* x, float const* w, float* y,
               ConvEpilogue const& epilogue, std::uint16_t* x16) {
    std::lock_guard<std::mutex> lock(mutex_);
    Fused const fused(epilogue);
    Entry& e = entry(Op::forward, bf16, s, fused);
    void* x_in = const_cast<float*>(x);
    if (bf16 && x16 != nullptr) {
      if (x != nullptr) to_bf16("ktr::conv::to_bf16", space, x, elements(e.a), x16);
      x_in = x16;
    } else if (bf16)
      x_in = rounded(space, x, elements(e.a), a16_);
    if (fused.any()) e.bias.set_data_handle(const_cast<float*>(epilogue.bias));
    execute(space, e, Op::forward, x_in, nullptr, w, y, fused.any());
  }

  // The kernel gradient, then (dx not null) the input gradient: dy rounded once for both under bf16; x and dy
  // taken from the caller's roundings where it kept them (x16, dy16).
  void backward(ExecSpace const& space, bool bf16, ConvShape const& s, float const* x, float const* dy,
                float const* w, float* dw, float* dx, std::uint16_t const* x16, std::uint16_t const* dy16) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& ew = entry(Op::backward_weights, bf16, s);
    void* x_in = const_cast<float*>(x);
    void* dy_in = const_cast<float*>(dy);
    if (bf16) {
      x_in = x16 != nullptr ? const_cast<std::uint16_t*>(x16) : rounded(space, x, elements(ew.a), a16_);
      dy_in = dy16 != nullptr ? const_cast<std::uint16_t*>(dy16) : rounded(space, dy, elements(ew.b), b16_);
    }
    execute(space, ew, Op::backward_weights, x_in, dy_in, nullptr, dw);
    if (dx != nullptr) execute(space, entry(Op::backward_data, bf16, s), Op::backward_data, dy_in, nullptr, w, dx);
  }

  // Runs one primitive: forward (a = src, kernel -> weights, c = dst), backward data (a = diff_dst, kernel ->
  // weights, c = diff_src) or backward weights (a = src, b = diff_dst, c = the kernel gradient, HWIO).
  void execute(ExecSpace const& space, Entry& e, Op op, void* a, void* b, float const* kernel, float* c,
               bool bias = false) {
    space.fence();  // the roundings and the inputs are ready; oneDNN runs on its own threads
    // A Kokkos profiling region named with the convolution's shape, pass and precision, for tools that listen (ktr
    // bench profile, Kokkos Tools), as ktr::gemm names its own; the roundings to bf16 before it are kernels of
    // their own.
    Region const region([&] {
      ConvShape const& s = e.shape;
      char const* const pass[] = {"forward", "backward_data", "backward_weights"};
      return "ktr::conv " + std::to_string(s.batch) + "x" + std::to_string(s.height) + "x" +
             std::to_string(s.width) + "x" + std::to_string(s.channels) + "->" + std::to_string(s.features) +
             " k" + std::to_string(s.kernel) + " s" + std::to_string(s.stride) + " " + pass[int(op)] +
             (e.bf16 ? " bf16" : "");
    });
    e.scratch.set_data_handle(scratch_.data());
    e.a.set_data_handle(a);
    if (op == Op::backward_weights) {
      e.b.set_data_handle(b);
      e.c.set_data_handle(e.reorders ? static_cast<void*>(e.kernel_buffer.data()) : static_cast<void*>(c));
      e.primitive.execute(stream_, {{DNNL_ARG_SRC, e.a},
                                    {DNNL_ARG_DIFF_DST, e.b},
                                    {DNNL_ARG_DIFF_WEIGHTS, e.c},
                                    {DNNL_ARG_SCRATCHPAD, e.scratch}});
      if (e.reorders) {
        e.user_kernel.set_data_handle(c);
        e.kernel_reorder.execute(stream_, e.c, e.user_kernel);
      }
    } else {
      if (e.reorders) {
        e.user_kernel.set_data_handle(const_cast<float*>(kernel));
        e.kernel_reorder.execute(stream_, e.user_kernel, e.b);
      } else {
        e.b.set_data_handle(const_cast<float*>(kernel));
      }
      e.c.set_data_handle(c);
      int const in = op == Op::forward ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST;
      int const out = op == Op::forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC;
      std::unordered_map<int, dnnl::memory> args{
          {in, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {out, e.c}, {DNNL_ARG_SCRATCHPAD, e.scratch}};
      if (bias) args.emplace(DNNL_ARG_BIAS, e.bias);
      e.primitive.execute(stream_, args);
    }
    stream_.wait();
  }

  std::string implementation() {
    std::lock_guard<std::mutex> lock(mutex_);
    ConvShape s;
    s.batch = 32, s.height = s.width = s.out_height = s.out_width = 32, s.channels = s.features = 32;
    s.kernel = 3, s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
    return forward_desc(s, false, Fused()).impl_info_str();
  }

 private:
  OneDnnConv() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  static dnnl::memory::desc activations(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c,
                                        dt type = dt::f32) {
    return dnnl::memory::desc({n, c, h, w}, type, tag::nhwc);
  }
  static dnnl::memory::desc kernel(ConvShape const& s, tag t, dt type = dt::f32) {
    return dnnl::memory::desc({s.features, s.channels, s.kernel, s.kernel}, type, t);
  }
  static std::int64_t elements(dnnl::memory const& m) {
    std::int64_t n = 1;
    for (auto d : m.get_desc().dims()) n *= d;
    return n;
  }
  // `n` floats at `x` rounded into `buffer` (grown to fit).
  static std::uint16_t* rounded(ExecSpace const& space, float const* x, std::int64_t n,
                                HostView<std::uint16_t*>& buffer) {
    if (std::int64_t(buffer.extent(0)) < n)
      buffer = HostView<std::uint16_t*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::conv::bf16"),
                                        std::size_t(n));
    to_bf16("ktr::conv::to_bf16", space, x, n, buffer.data());
    return buffer.data();
  }
  static dnnl::memory::dims strides(ConvShape const& s) { return {s.stride, s.stride}; }
  static dnnl::memory::dims pad_l(ConvShape const& s) { return {s.pad_top, s.pad_left}; }
  static dnnl::memory::dims pad_r(ConvShape const& s) { return {s.pad_bottom, s.pad_right}; }
  // `fused`: the activation after the bias as an eltwise post-op (relu's, with leaky_relu's slope as its alpha:
  // the library's max(z, 0) / z < 0 ? slope z : z are ktr's to the bit).
  static dnnl::primitive_attr attributes(Fused const& fused = Fused()) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // ktr's buffer: a call allocates nothing
    if (fused.act == int(ConvEpilogue::Act::relu) || fused.act == int(ConvEpilogue::Act::leaky_relu)) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, fused.slope, 0.0f);
      attr.set_post_ops(ops);
    }
    return attr;
  }

  // bf16: bf16 inputs (src, weights) and fp32 outputs (and an fp32 bias where it fuses one; a zero descriptor is
  // no bias).
  dnnl::convolution_forward::primitive_desc forward_desc(ConvShape const& s, bool bf16, Fused const& fused) const {
    dt const in = bf16 ? dt::bf16 : dt::f32;
    dnnl::convolution_forward::desc const d(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
        activations(s.batch, s.height, s.width, s.channels, in), kernel(s, tag::any, in),
        fused.any() ? dnnl::memory::desc({s.features}, dt::f32, tag::a) : dnnl::memory::desc(),
        activations(s.batch, s.out_height, s.out_width, s.features), strides(s), pad_l(s), pad_r(s));
    return dnnl::convolution_forward::primitive_desc(d, attributes(fused), engine_);
  }

  // The backward primitives (fused: Fused()) take the plain forward as their hint.
  Entry& entry(Op op, bool bf16, ConvShape const& s, Fused const& fused = Fused()) {
    Key const key = key_of(op, bf16, fused, s);
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    auto e = std::make_unique<Entry>();
    e->shape = s, e->bf16 = bf16;
    dt const in = bf16 ? dt::bf16 : dt::f32;
    dnnl::convolution_forward::primitive_desc const fwd =
        forward_desc(s, bf16, op == Op::forward ? fused : Fused());
    dnnl::memory::desc prim_kernel, scratch;
    if (op == Op::forward) {
      e->primitive = dnnl::convolution_forward(fwd);
      e->a = dnnl::memory(fwd.src_desc(), engine_, DNNL_MEMORY_NONE);
      e->c = dnnl::memory(fwd.dst_desc(), engine_, DNNL_MEMORY_NONE);
      if (fused.any()) e->bias = dnnl::memory(fwd.bias_desc(), engine_, DNNL_MEMORY_NONE);
      prim_kernel = fwd.weights_desc(), scratch = fwd.scratchpad_desc();
    } else if (op == Op::backward_data) {
      dnnl::convolution_backward_data::desc const d(
          dnnl::algorithm::convolution_direct, activations(s.batch, s.height, s.width, s.channels),
          kernel(s, tag::any, in), activations(s.batch, s.out_height, s.out_width, s.features, in), strides(s),
          pad_l(s), pad_r(s));
      dnnl::convolution_backward_data::primitive_desc const pd(d, attributes(), engine_, fwd);
      e->primitive = dnnl::convolution_backward_data(pd);
      e->a = dnnl::memory(pd.diff_dst_desc(), engine_, DNNL_MEMORY_NONE);
      e->c = dnnl::memory(pd.diff_src_desc(), engine_, DNNL_MEMORY_NONE);
      prim_kernel = pd.weights_desc(), scratch = pd.scratchpad_desc();
    } else {
      dnnl::convolution_backward_weights::desc const d(
          dnnl::algorithm::convolution_direct, activations(s.batch, s.height, s.width, s.channels, in),
          kernel(s, tag::any), activations(s.batch, s.out_height, s.out_width, s.features, in), strides(s),
          pad_l(s), pad_r(s));
      dnnl::convolution_backward_weights::primitive_desc const pd(d, attributes(), engine_, fwd);
      e->primitive = dnnl::convolution_backward_weights(pd);
      e->a = dnnl::memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE);
      e->b = dnnl::memory(pd.diff_dst_desc(), engine_, DNNL_MEMORY_NONE);
      prim_kernel = pd.diff_weights_desc(), scratch = pd.scratchpad_desc();
    }
    dnnl::memory::desc const user = kernel(s, tag::hwio);
    e->user_kernel = dnnl::memory(user, engine_, DNNL_MEMORY_NONE);
    e->reorders = prim_kernel != user;
    dnnl::memory& k = op == Op::backward_weights ? e->c : e->b;
    if (e->reorders) {
      e->kernel_buffer = HostView<char*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::conv::kernel"),
                                         prim_kernel.get_size());
      k = dnnl::memory(prim_kernel, engine_, e->kernel_buffer.data());
      e->kernel_reorder =
          op == Op::backward_weights ? dnnl::reorder(k, e->user_kernel) : dnnl::reorder(e->user_kernel, k);
    } else {
      k = dnnl::memory(prim_kernel, engine_, DNNL_MEMORY_NONE);
    }
    e->scratch = dnnl::memory(scratch, engine_, DNNL_MEMORY_NONE);
    if (std::int64_t(scratch_.extent(0)) < std::int64_t(scratch.get_size()))
      scratch_ = HostView<char*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::conv::scratch"),
                                 scratch.get_size());
    return *cache_.emplace(key, std::move(e)).first->second;
  }

  std::mutex mutex_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<Key, std::unique_ptr<Entry>> cache_;
  HostView<char*> scratch_;
  HostView<std::uint16_t*> a16_, b16_;
};

template <class F>
void guarded(char const* what, F const& f) {
  try {
    f(OneDnnConv::get());
  } catch (dnnl::error const& e) {
    throw Error(std::string(what) + " (oneDNN): " + e.what() + " (status " + std::to_string(e.status) + ")");
  }
}

bool is_bf16(Precision const& p) { return p.matmul == MatmulPrecision::bf16; }

}  // namespace

std::string conv_library_unavailable(ConvShape const&, Precision const& precision) {
  static bool const off = [] {
    char const* v = std::getenv("KTR_CONV_LIBRARY");
    return v != nullptr && std::strcmp(v, "off") == 0;
  }();
  if (off) return "the convolution library is switched off here (KTR_CONV_LIBRARY=off)";
  if (precision.matmul == MatmulPrecision::tf32) return "oneDNN convolutions run fp32 and bf16, not tf32";
  if (precision.matmul == MatmulPrecision::bf16) return impl::onednn_bf16_unavailable();
  return "";
}

std::string conv_library() {
  dnnl_version_t const* v = dnnl_version();
  std::string s =
      "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  try {
    std::string const why = conv_library_unavailable(ConvShape{}, Precision{});
    if (!why.empty()) return s + ": " + why;
    return s + ", kernel " + OneDnnConv::get().implementation() + " (fp32" +
           std::string(impl::onednn_bf16_unavailable().empty() ? " and bf16" : "") + ")";
  } catch (dnnl::error const& e) {
    return s + ": " + e.what();
  }
}

void conv_library_forward(ExecSpace const& space, Precision const& p, ConvShape const& s, float const* x,
                          float const* w, float* y, ConvEpilogue const& epilogue, std::uint16_t* x16) {
  guarded("ktr::conv::forward", [&](OneDnnConv& c) { c.forward(space, is_bf16(p), s, x, w, y, epilogue, x16); });
}

void conv_library_backward(ExecSpace const& space, Precision const& p, ConvShape const& s, float const* x,
                           float const* dy, float const* w, float* dw, float* dx, std::uint16_t const* x16,
                           std::uint16_t const* dy16) {
  guarded("ktr::conv::backward",
          [&](OneDnnConv& c) { c.backward(space, is_bf16(p), s, x, dy, w, dw, dx, x16, dy16); });
}

}  // namespace ktr
