// Matmuls on hosts through oneDNN: bf16 (the operands rounded into bf16 buffers ktr owns, one Kokkos kernel each,
// unless the caller holds them rounded already: a run's weights, which its optimiser keeps in bf16 too; bf16
// inputs, fp32 accumulation and output) and, on the CPUs where it is measured faster than OpenBLAS, fp32; oneDNN's
// matmul primitive, one per shape and type, created once.
#include "gemm_onednn.hpp"

#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "gemm.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace ktr::impl {

namespace {

using dt = dnnl::memory::data_type;

// The committed rule for fp32 matmuls (issue 43: measured, never timed at run time, so that a run and its resume
// take one path): oneDNN on CPUs with AMX (measured faster than OpenBLAS at ktr's shapes on such a Xeon), OpenBLAS
// on every other CPU (not measured against it). KTR_FP32_GEMM=onednn|openblas overrides it.
constexpr bool kOneDnnFp32ByDefault = true;

struct CpuBf16 {
  bool avx512_bf16 = false, amx_bf16 = false, avx512f = false, avx2 = false;
};

CpuBf16 cpu_bf16() {
  CpuBf16 f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1u;
    f.avx512f = (b >> 16) & 1u;
    f.amx_bf16 = (d >> 22) & 1u;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a >> 5) & 1u;
  return f;
}

std::string cpu_bf16_words(CpuBf16 const& f) {
  if (f.amx_bf16) return f.avx512_bf16 ? "AMX-BF16, AVX512-BF16" : "AMX-BF16";
  if (f.avx512_bf16) return "AVX512-BF16, no AMX";
  return "no bf16 instructions";
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, std::int64_t, std::int64_t, float,
                       float, bool>;  // M, N, K, transposes, leading dimensions of A and B, alpha, beta, bf16

struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory a, b, c, scratch;
};

class OneDnn {
 public:
  static OneDnn& get() {
    static OneDnn* one = new OneDnn;  // never destroyed: oneDNN's own state may outlive static destructors
    return *one;
  }

  void gemm(ExecSpace const& space, bool ta, bool tb, float alpha, ConstMatrix const& a, std::uint16_t const* a16,
            ConstMatrix const& b, std::uint16_t const* b16, float beta, Matrix const& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::int64_t const m = c.extent(0), n = c.extent(1), k = ta ? a.extent(0) : a.extent(1);
    std::int64_t const lda = a.extent(1), ldb = b.extent(1);
    Primitive& p = primitive(Key{m, n, k, ta, tb, lda, ldb, alpha, beta, true});
    if (a16 == nullptr) a16 = rounded(space, a, a16_);
    if (b16 == nullptr) b16 = rounded(space, b, b16_);
    space.fence();                                         // oneDNN runs on its own threads
    p.a.set_data_handle(const_cast<std::uint16_t*>(a16));  // oneDNN's handles are not const; it only reads them
    p.b.set_data_handle(const_cast<std::uint16_t*>(b16));
    p.c.set_data_handle(c.data());
    p.scratch.set_data_handle(scratch_.data());
    p.matmul.execute(
        stream_,
        {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}, {DNNL_ARG_SCRATCHPAD, p.scratch}});
    stream_.wait();
  }

  void gemm_fp32(ExecSpace const& space, bool ta, bool tb, float alpha, ConstMatrix const& a, ConstMatrix const& b,
                 float beta, Matrix const& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::int64_t const m = c.extent(0), n = c.extent(1), k = ta ? a.extent(0) : a.extent(1);
    Primitive& p =
        primitive(Key{m, n, k, ta, tb, std::int64_t(a.extent(1)), std::int64_t(b.extent(1)), alpha, beta, false});
    space.fence();  // oneDNN runs on its own threads
    p.a.set_data_handle(const_cast<float*>(a.data()));
    p.b.set_data_handle(const_cast<float*>(b.data()));
    p.c.set_data_handle(c.data());
    p.scratch.set_data_handle(scratch_.data());
    p.matmul.execute(
        stream_,
        {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}, {DNNL_ARG_SCRATCHPAD, p.scratch}});
    stream_.wait();
  }

  std::string implementation(bool bf16 = true) {
    std::lock_guard<std::mutex> lock(mutex_);
    dnnl::primitive_desc_base const pd = describe(Key{256, 512, 784, false, false, 784, 512, 1.0f, 0.0f, bf16});
    return pd.impl_info_str();
  }

 private:
  OneDnn() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  dnnl::matmul::primitive_desc describe(Key const& key) const {
    auto const [m, n, k, ta, tb, lda, ldb, alpha, beta, bf16] = key;
    dt const in = bf16 ? dt::bf16 : dt::f32;
    // op(A) (M, K) and op(B) (K, N) as strides over the row-major storage: a transpose swaps them.
    dnnl::memory::desc const ad({m, k}, in, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
    dnnl::memory::desc const bd({k, n}, in, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
    dnnl::memory::desc const cd({m, n}, dt::f32, dnnl::memory::dims{n, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // ktr's buffer: a call allocates nothing
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attr, engine_);
  }

  Primitive& primitive(Key const& key) {
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    dnnl::matmul::primitive_desc const pd = describe(key);
    auto p = std::make_unique<Primitive>();
    p->matmul = dnnl::matmul(pd);
    p->a = dnnl::memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE);
    p->b = dnnl::memory(pd.weights_desc(), engine_, DNNL_MEMORY_NONE);
    p->c = dnnl::memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE);
    p->scratch = dnnl::memory(pd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    grow(scratch_, std::int64_t(pd.scratchpad_desc().get_size()));
    return *cache_.emplace(key, std::move(p)).first->second;
  }

  // `m` rounded into `buffer` (grown to fit).
  static std::uint16_t const* rounded(ExecSpace const& space, ConstMatrix const& m,
                                      HostView<std::uint16_t*>& buffer) {
    std::int64_t const n = std::int64_t(m.size());
    grow(buffer, n);
    to_bf16("ktr::gemm::to_bf16", space, m.data(), n, buffer.data());
    return buffer.data();
  }

  template <class T>
  static void grow(HostView<T*>& v, std::int64_t n) {
    if (std::int64_t(v.extent(0)) >= n) return;
    v = HostView<T*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::gemm::bf16"), std::size_t(n));
  }

  std::mutex mutex_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<Key, std::unique_ptr<Primitive>> cache_;
  HostView<std::uint16_t*> a16_, b16_;
  HostView<char*> scratch_;
};

}  // namespace

void gemm_bf16_onednn(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                      std::uint16_t const* a16, ConstMatrix const& b, std::uint16_t const* b16, float beta,
                      Matrix const& c) {
  try {
    OneDnn::get().gemm(space, trans_a, trans_b, alpha, a, a16, b, b16, beta, c);
  } catch (dnnl::error const& e) {
    throw Error(std::string("ktr::gemm (bf16, oneDNN): ") + e.what() + " (status " + std::to_string(e.status) +
                ")");
  }
}

void gemm_fp32_onednn(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                      ConstMatrix const& b, float beta, Matrix const& c) {
  try {
    OneDnn::get().gemm_fp32(space, trans_a, trans_b, alpha, a, b, beta, c);
  } catch (dnnl::error const& e) {
    throw Error(std::string("ktr::gemm (fp32, oneDNN): ") + e.what() + " (status " + std::to_string(e.status) +
                ")");
  }
}

bool onednn_fp32_chosen() {
  static bool const chosen = [] {
    char const* const v = std::getenv("KTR_FP32_GEMM");
    if (v != nullptr && std::strcmp(v, "onednn") == 0) return true;
    if (v != nullptr && std::strcmp(v, "openblas") == 0) return false;
    return kOneDnnFp32ByDefault && cpu_bf16().amx_bf16;
  }();
  return chosen;
}

std::string onednn_fp32_kernel() {
  try {
    return OneDnn::get().implementation(false);
  } catch (dnnl::error const& e) {
    return e.what();
  }
}

std::string onednn_bf16_unavailable() {
  char const* const off = std::getenv("KTR_BF16");
  if (off != nullptr && std::strcmp(off, "off") == 0) return "bf16 is switched off here (KTR_BF16=off)";
  CpuBf16 const f = cpu_bf16();
  if (f.avx512_bf16 || f.amx_bf16) return "";
  return std::string("bf16 needs a CPU with AVX512-BF16 or AMX-BF16 instructions; this one has neither (") +
         (f.avx512f ? "AVX-512 without BF16"
          : f.avx2  ? "AVX2 only"
                    : "no AVX2") +
         "): emulated bf16 would be slower than fp32";
}

std::string onednn_bf16_backend() {
  dnnl_version_t const* v = dnnl_version();
  std::string s = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch) + " (" + cpu_bf16_words(cpu_bf16()) + ")";
  std::string const why = onednn_bf16_unavailable();
  if (!why.empty()) return s + ": " + why;
  try {
    return s + ", kernel " + OneDnn::get().implementation();
  } catch (dnnl::error const& e) {
    return s + ": " + e.what();
  }
}

}  // namespace ktr::impl
