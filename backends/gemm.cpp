// gemm dispatch: cuBLAS with a per-stream handle on CUDA; KokkosBlas::gemm (on the instance where Kokkos Kernels
// takes one, host BLAS or portable kernel) elsewhere.
#include "gemm.hpp"

#include <ktr/ktr_config.hpp>
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "kokkos_compat.hpp"

#include <KokkosBlas3_gemm.hpp>

#if defined(KTR_ENABLE_ONEDNN)
#include "gemm_onednn.hpp"
#endif

#include <atomic>
#include <cstdlib>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <library_types.h>

#include <map>
#include <mutex>
#include <string>
#endif

// OpenBLAS's own entry points, looked up weakly: present when the host BLAS is OpenBLAS, null otherwise.
extern "C" {
__attribute__((weak)) char* openblas_get_config(void);
__attribute__((weak)) char* openblas_get_corename(void);
__attribute__((weak)) void openblas_set_num_threads(int);
__attribute__((weak)) void gotoblas_dynamic_init(void);  // a DYNAMIC_ARCH build's kernel choice, and its undoing
__attribute__((weak)) void gotoblas_dynamic_quit(void);
}

namespace ktr {

namespace {

void check_shapes(bool ta, bool tb, ConstMatrix const& a, ConstMatrix const& b, Matrix const& c) {
  auto m = ta ? a.extent(1) : a.extent(0);
  auto k = ta ? a.extent(0) : a.extent(1);
  auto kb = tb ? b.extent(1) : b.extent(0);
  auto n = tb ? b.extent(0) : b.extent(1);
  KTR_REQUIRE(k == kb && c.extent(0) == m && c.extent(1) == n, "ktr::gemm",
              "shape mismatch: op(A) " + std::to_string(m) + "x" + std::to_string(k) + ", op(B) " +
                  std::to_string(kb) + "x" + std::to_string(n) + ", C " + std::to_string(c.extent(0)) + "x" +
                  std::to_string(c.extent(1)));
}

std::atomic<std::int64_t> g_gemm_calls[matmul_precision_count] = {};  // per MatmulPrecision
std::atomic<MatmulPrecision> g_precision{MatmulPrecision::fp32};      // the process default
thread_local int t_precision = -1;  // this thread's scoped precision (a MatmulPrecision), -1 for none
thread_local ScopedBf16Copy const* t_bf16_copy = nullptr;  // this thread's innermost ScopedBf16Copy
std::atomic<std::int64_t> g_bf16_roundings{0};             // operands gemm rounded itself

#if defined(KOKKOS_ENABLE_CUDA)
// A CUDA or cuBLAS call that failed: ktr::Error naming it and the runtime's reason (none is ignored).
void check_cuda(cudaError_t status, char const* call) {
  if (status != cudaSuccess)
    throw Error(std::string("ktr::gemm: ") + call + " failed: " + cudaGetErrorString(status));
}
void check_cublas(cublasStatus_t status, char const* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("ktr::gemm: ") + call + " failed with cuBLAS status " + std::to_string(int(status)));
}

// One cuBLAS handle per stream, each bound to its stream once, with a ktr-owned workspace: cuBLAS would otherwise
// allocate its workspace itself, which a captured graph must not see, and a shared handle re-pointed at each
// call's stream races between host threads.
struct CublasStream {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  MatmulPrecision precision = MatmulPrecision::fp32;
  std::uint64_t generation = 0;   ///< unique per handle ever created: a program captured with it names it
  std::uint16_t* bf16 = nullptr;  ///< bf16 copies of a bf16 gemm's operands, grown to the largest seen
  std::size_t bf16_elements = 0;
};

class CublasRegistry {
 public:
  static CublasRegistry& get() {
    static CublasRegistry* registry = new CublasRegistry;  // never destroyed: the finalize hook empties it
    return *registry;
  }

  /// The handle for `stream`, created (with its workspace) on first use, in `precision`'s math mode.
  cublasHandle_t handle(cudaStream_t stream, MatmulPrecision precision) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) it = streams_.emplace(stream, create(stream)).first;
    CublasStream& s = it->second;
    if (s.precision != precision) {
      check_cublas(cublasSetMathMode(s.handle, precision == MatmulPrecision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                                  : CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode");
      s.precision = precision;
    }
    return s.handle;
  }

  /// Room for `elements` bf16 values on `stream` (its handle's buffer, grown where smaller: the first, plain
  /// dispatch of a run grows it, so a captured one finds it large enough).
  std::uint16_t* bf16_buffer(cudaStream_t stream, std::size_t elements) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) it = streams_.emplace(stream, create(stream)).first;
    CublasStream& s = it->second;
    if (s.bf16_elements < elements) {
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      check_cuda(cudaStreamIsCapturing(stream, &capturing), "cudaStreamIsCapturing");
      KTR_REQUIRE(capturing == cudaStreamCaptureStatusNone, "ktr::gemm",
                  "a bf16 gemm larger than any before it while the stream is captured (run it plainly first)");
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      if (s.bf16) check_cuda(cudaFree(s.bf16), "cudaFree");
      s.bf16 = nullptr, s.bf16_elements = 0;
      KTR_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&s.bf16), elements * sizeof(std::uint16_t)) == cudaSuccess,
                  "ktr::gemm", "cannot allocate " + std::to_string(elements * 2 >> 20) + " MiB for bf16 operands");
      s.bf16_elements = elements;
    }
    return s.bf16;
  }

  /// The generation of `stream`'s handle, created (with its workspace) if it has none yet.
  std::uint64_t generation(cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) it = streams_.emplace(stream, create(stream)).first;
    return it->second.generation;
  }

  void release(cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) return;
    // Called from DeviceStream's destructor, which cannot throw: a failed wait is cleared, and the handle and its
    // buffers go whatever the stream says.
    if (cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaGetLastError();
    destroy(it->second);
    streams_.erase(it);
  }

 private:
  CublasStream create(cudaStream_t stream) {
    if (!hook_registered_) {  // the handles go before the CUDA context does, at Kokkos::finalize
      Kokkos::push_finalize_hook([] { get().release_all(); });
      hook_registered_ = true;
    }
    CublasStream s;
    KTR_REQUIRE(cublasCreate(&s.handle) == CUBLAS_STATUS_SUCCESS, "ktr::gemm", "cublasCreate failed");
    int device = 0, major = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
               "cudaDeviceGetAttribute");
    // NVIDIA's recommendation: 32 MiB on Hopper and newer, 4 MiB before.
    std::size_t const bytes = std::size_t(major >= 9 ? 32 : 4) << 20;
    if (cudaMalloc(&s.workspace, bytes) != cudaSuccess) {
      cublasDestroy(s.handle);
      throw Error("ktr::gemm: cannot allocate the " + std::to_string(bytes >> 20) + " MiB cuBLAS workspace");
    }
    auto const ok = cublasSetStream(s.handle, stream) == CUBLAS_STATUS_SUCCESS &&
                    cublasSetWorkspace(s.handle, s.workspace, bytes) == CUBLAS_STATUS_SUCCESS &&
                    cublasSetMathMode(s.handle, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS;
    if (!ok) {
      destroy(s);
      throw Error("ktr::gemm: cannot bind a cuBLAS handle to its stream and workspace");
    }
    s.generation = next_generation_++;
    return s;
  }

  static void destroy(CublasStream& s) {
    if (s.handle) cublasDestroy(s.handle);
    if (s.bf16) cudaFree(s.bf16);
    if (s.workspace) cudaFree(s.workspace);
    s = CublasStream{};
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& entry : streams_) destroy(entry.second);
    streams_.clear();
    hook_registered_ = false;  // a later Kokkos::initialize registers it again
  }

  std::mutex mutex_;
  std::map<cudaStream_t, CublasStream> streams_;
  std::uint64_t next_generation_ = 1;  // never reset: generations stay unique across Kokkos re-initialisations
  bool hook_registered_ = false;
};
#endif

// A Kokkos profiling region named with the gemm's shape (M x N x K and the transposes), for tools that listen
// (ktr bench profile, Kokkos Tools); nothing is built when none does.
class ShapeRegion {
 public:
  ShapeRegion(bool trans_a, bool trans_b, ConstMatrix const& a, Matrix const& c)
      : on_(Kokkos::Profiling::profileLibraryLoaded()) {
    if (!on_) return;
    auto const k = trans_a ? a.extent(0) : a.extent(1);
    Kokkos::Profiling::pushRegion("ktr::gemm " + std::to_string(c.extent(0)) + "x" + std::to_string(c.extent(1)) +
                                  "x" + std::to_string(k) + " " + (trans_a ? "T" : "N") + (trans_b ? "T" : "N"));
  }
  ~ShapeRegion() {
    if (on_) Kokkos::Profiling::popRegion();
  }
  ShapeRegion(ShapeRegion const&) = delete;
  ShapeRegion& operator=(ShapeRegion const&) = delete;

 private:
  bool on_;
};

}  // namespace

std::int64_t gemm_calls() {
  std::int64_t n = 0;
  for (auto const& calls : g_gemm_calls) n += calls.load();
  return n;
}

std::int64_t gemm_calls(MatmulPrecision p) { return g_gemm_calls[int(p)].load(); }

namespace {

void gemm_in(MatmulPrecision precision, ExecSpace const& space, bool trans_a, bool trans_b, float alpha,
             ConstMatrix const& a, ConstMatrix const& b, float beta, Matrix const& c) {
  check_shapes(trans_a, trans_b, a, b, c);
  g_gemm_calls[int(precision)].fetch_add(1, std::memory_order_relaxed);
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  ShapeRegion const region(trans_a, trans_b, a, c);
#if defined(KOKKOS_ENABLE_CUDA)
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
  int const m = static_cast<int>(c.extent(0)), n = static_cast<int>(c.extent(1));
  int const k = static_cast<int>(trans_a ? a.extent(0) : a.extent(1));
  cudaStream_t const stream = space.cuda_stream();
  cublasHandle_t const h = CublasRegistry::get().handle(stream, precision);
  cublasOperation_t const op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  int const ldb = static_cast<int>(b.extent(1)), lda = static_cast<int>(a.extent(1));
  cublasStatus_t status;
  if (precision == MatmulPrecision::bf16) {  // tensor cores: bf16 operands, fp32 accumulation and output
    std::size_t const na = a.size(), nb = b.size(), at = (na + 127) / 128 * 128;  // B's copy 256-byte aligned
    std::uint16_t const* a16 = bf16_copy_of(a.data(), std::int64_t(na));
    std::uint16_t const* b16 = bf16_copy_of(b.data(), std::int64_t(nb));
    g_bf16_roundings.fetch_add(int(a16 == nullptr) + int(b16 == nullptr), std::memory_order_relaxed);
    if (a16 == nullptr || b16 == nullptr) {  // what no ScopedBf16Copy holds, rounded into the stream's buffer
      std::uint16_t* const buffer = CublasRegistry::get().bf16_buffer(stream, at + nb);
      if (a16 == nullptr) {
        to_bf16("ktr::gemm::to_bf16", space, a.data(), std::int64_t(na), buffer);
        a16 = buffer;
      }
      if (b16 == nullptr) {
        to_bf16("ktr::gemm::to_bf16", space, b.data(), std::int64_t(nb), buffer + at);
        b16 = buffer + at;
      }
    }
    status = cublasGemmEx(h, op_b, op_a, n, m, k, &alpha, b16, CUDA_R_16BF, ldb, a16, CUDA_R_16BF, lda, &beta,
                          c.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  } else {
    status = cublasSgemm(h, op_b, op_a, n, m, k, &alpha, b.data(), ldb, a.data(), lda, &beta, c.data(), n);
  }
  KTR_REQUIRE(status == CUBLAS_STATUS_SUCCESS, "ktr::gemm",
              "cuBLAS gemm failed with status " + std::to_string(status));
#else
  if (precision == MatmulPrecision::bf16) {
#if defined(KTR_ENABLE_ONEDNN)
    std::uint16_t const* const a16 = bf16_copy_of(a.data(), std::int64_t(a.size()));
    std::uint16_t const* const b16 = bf16_copy_of(b.data(), std::int64_t(b.size()));
    g_bf16_roundings.fetch_add(int(a16 == nullptr) + int(b16 == nullptr), std::memory_order_relaxed);
    impl::gemm_bf16_onednn(space, trans_a, trans_b, alpha, a, a16, b, b16, beta, c);
    return;
#else
    throw Error("ktr::gemm: " + matmul_unavailable(precision));
#endif
  }
#if KTR_KK_GEMM_TAKES_SPACE
  // Kokkos Kernels 4.x: on the instance (HIP: its stream, so the K-step program can be captured).
  KokkosBlas::gemm(space, trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
#else
  // Kokkos Kernels 3.4.01 has no execution-space overload: the default instance (FIXME_HIP: the null stream, so
  // HIP builds against 3.4.01 run the plain loop, never a captured one).
  (void)space;
  KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
#endif
#endif
}

}  // namespace

void gemm(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
          ConstMatrix const& b, float beta, Matrix const& c) {
  gemm_in(matmul_precision(), space, trans_a, trans_b, alpha, a, b, beta, c);
}

void gemm_fp32(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
               ConstMatrix const& b, float beta, Matrix const& c) {
  gemm_in(MatmulPrecision::fp32, space, trans_a, trans_b, alpha, a, b, beta, c);
}

void column_sums(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums) {
  std::int64_t const rows = std::int64_t(x.extent(0)), cols = std::int64_t(x.extent(1));
  if (cols == 0) return;
#if defined(KOKKOS_ENABLE_CUDA)
  KTR_REQUIRE(ones != nullptr || rows == 0, "ktr::column_sums", "CUDA's path needs the ones vector");
  if (rows == 0) {
    Kokkos::deep_copy(space, Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(sums, cols),
                      0.0f);
    return;
  }
  // Row-major (rows, cols) is column-major (cols, rows): its product with the ones vector sums the rows.
  cudaStream_t const stream = space.cuda_stream();
  cublasHandle_t const h = CublasRegistry::get().handle(stream, MatmulPrecision::fp32);
  float const one = 1.0f, zero = 0.0f;
  cublasStatus_t const status =
      cublasSgemv(h, CUBLAS_OP_N, int(cols), int(rows), &one, x.data(), int(cols), ones, 1, &zero, sums, 1);
  KTR_REQUIRE(status == CUBLAS_STATUS_SUCCESS, "ktr::column_sums",
              "cuBLAS gemv failed with status " + std::to_string(status));
#else
  (void)ones;
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  float const* const data = x.data();
  Kokkos::parallel_for(
      "ktr::gemm::column_sums", Team(space, int(cols), Kokkos::AUTO),
      KOKKOS_LAMBDA(Team::member_type const& team) {
        std::int64_t const j = team.league_rank();
        float sum = 0.0f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows), [&](std::int64_t i, float& s) { s += data[i * cols + j]; }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] { sums[j] = sum; });
      });
#endif
}

std::string gemm_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  MatmulPrecision const p = matmul_precision();
  return std::string("cuBLAS (per-stream handle and workspace, ") +
         (p == MatmulPrecision::tf32   ? "TF32"
          : p == MatmulPrecision::bf16 ? "BF16 tensor cores, FP32 accumulation"
                                       : "FP32") +
         ")";
#else
  std::string s = KTR_KK_GEMM_TAKES_SPACE ? "KokkosBlas::gemm (instance)" : "KokkosBlas::gemm";
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  s += " -> host BLAS";
  if (openblas_get_config) s += std::string(" (") + openblas_get_config() + ")";
#elif defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS)
  s += " -> rocBLAS (one process-wide handle)";
#else
  s += " (portable kernel, no TPL BLAS)";
#endif
  return s;
#endif
}

namespace {
std::string g_blas_note;  // set once, by select_host_blas_kernels, before any host BLAS call
}  // namespace

std::string select_host_blas_kernels() {
  // Host builds only: a GPU build's matmuls are cuBLAS's or Kokkos Kernels' own (and a HIP device pass would not
  // take the x86 builtins).
#if defined(__x86_64__) && !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP)
  if (!openblas_get_corename || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return "";
  std::string const core = openblas_get_corename();
  __builtin_cpu_init();
  bool const avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool const avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (char const* const set = std::getenv("OPENBLAS_CORETYPE")) {  // the user's choice, kept; said where it costs
    if (avx512 && (core == "Haswell" || core == "haswell" || core == "Zen" || core == "zen"))
      g_blas_note = std::string("kernels: ") + core + " (OPENBLAS_CORETYPE=" + set +
                    "; this CPU runs AVX-512 kernels, 1.5x faster at the MLP on an AMD Zen 5: unset it)";
    return g_blas_note;
  }
  bool const fallback = core == "prescott" || core == "Prescott" || core == "core2" || core == "Core2" ||
                        core == "nehalem" || core == "Nehalem" || core == "katmai" || core == "Katmai";
  if (!fallback || !avx2) return "";
  char const* const chosen = avx512 ? "SkylakeX" : "Haswell";
  // OPENBLAS_CORETYPE is what gotoblas_dynamic_init reads; set for the call only.
  if (setenv("OPENBLAS_CORETYPE", chosen, 0) != 0) return "";
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  g_blas_note = std::string("kernels: ") + openblas_get_corename() + " (OpenBLAS took this CPU for " + core +
                "; OPENBLAS_CORETYPE overrides)";
  return g_blas_note;
#else
  return "";
#endif
}

std::string host_blas() {
  if (openblas_get_config)
    return std::string(openblas_get_config()) + " (openblas_get_config)" +
           (g_blas_note.empty() ? "" : "; " + g_blas_note);
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  return "a BLAS through Kokkos Kernels' TPL (not OpenBLAS)";
#else
  return "none found";
#endif
}

void set_host_blas_threads(int threads) {
  if (openblas_set_num_threads && threads > 0) openblas_set_num_threads(threads);
}

bool gemm_handles_per_stream() {
#if defined(KOKKOS_ENABLE_CUDA)
  return true;
#else
  return false;
#endif
}

bool matmul_tf32_available() {
#if defined(KOKKOS_ENABLE_CUDA)
  return true;
#else
  return false;
#endif
}

char const* matmul_precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::tf32 ? "tf32" : p == MatmulPrecision::bf16 ? "bf16" : "fp32";
}

std::string matmul_unavailable(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::fp32:
      return "";
    case MatmulPrecision::tf32:
      return matmul_tf32_available()
                 ? ""
                 : std::string("tf32 needs a CUDA build (this build runs on ") + ExecSpace::name() + ")";
    case MatmulPrecision::bf16:
#if defined(KOKKOS_ENABLE_CUDA)
    {
      int device = 0, major = 0;
      if (cudaGetDevice(&device) != cudaSuccess ||
          cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
        return "bf16: cannot query the CUDA device's compute capability";
      return major >= 8 ? ""
                        : "bf16 needs tensor cores of compute capability 8.0 or newer (this GPU: " +
                              std::to_string(major) + ".x)";
    }
#elif defined(KOKKOS_ENABLE_HIP)
      return "bf16 is not available on HIP builds: its matmuls need rocBLAS or hipBLAS, which Debian does not "
             "package (fp32 runs on Kokkos Kernels)";
#elif defined(KTR_ENABLE_ONEDNN)
      return impl::onednn_bf16_unavailable();
#else
      return "bf16 needs oneDNN on hosts, and this build has none (install libdnnl-dev, as scripts/bootstrap.sh "
             "does, and configure again)";
#endif
  }
  return "unknown precision";
}

bool matmul_bf16_available() { return matmul_unavailable(MatmulPrecision::bf16).empty(); }

std::string matmul_bf16_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  std::string const why = matmul_unavailable(MatmulPrecision::bf16);
  return why.empty() ? "cuBLAS cublasGemmEx, CUDA_R_16BF operands, CUBLAS_COMPUTE_32F (tensor cores)" : why;
#elif defined(KTR_ENABLE_ONEDNN)
  return impl::onednn_bf16_backend();
#else
  return matmul_unavailable(MatmulPrecision::bf16);
#endif
}

MatmulPrecision parse_matmul_precision(std::string const& text, std::string const& flag) {
  MatmulPrecision p = MatmulPrecision::fp32;
  if (text == "tf32")
    p = MatmulPrecision::tf32;
  else if (text == "bf16")
    p = MatmulPrecision::bf16;
  else
    KTR_REQUIRE(text == "fp32", flag, "must be fp32, tf32 or bf16, got '" + text + "'");
  std::string const why = matmul_unavailable(p);
  KTR_REQUIRE(why.empty(), flag, why);
  return p;
}

void set_matmul_precision(MatmulPrecision p) {
  std::string const why = matmul_unavailable(p);
  KTR_REQUIRE(why.empty(), "ktr::set_matmul_precision", why);
  g_precision.store(p);
}

MatmulPrecision matmul_precision() { return t_precision >= 0 ? MatmulPrecision(t_precision) : g_precision.load(); }

ScopedMatmulPrecision::ScopedMatmulPrecision(MatmulPrecision p) : previous_(t_precision) {
  if (p != MatmulPrecision::fp32 && p != MatmulPrecision(previous_)) {  // checked once, where a run enters it
    std::string const why = matmul_unavailable(p);
    KTR_REQUIRE(why.empty(), "ktr::ScopedMatmulPrecision", why);
  }
  t_precision = int(p);
}

ScopedMatmulPrecision::~ScopedMatmulPrecision() { t_precision = previous_; }

ScopedBf16Copy::ScopedBf16Copy(float const* fp32, std::uint16_t const* bits, std::int64_t n)
    : outer_(t_bf16_copy), fp32_(fp32), bits_(bits), n_(n) {
  t_bf16_copy = this;
}

ScopedBf16Copy::~ScopedBf16Copy() { t_bf16_copy = outer_; }

std::uint16_t const* bf16_copy_of(float const* data, std::int64_t n) {
  for (ScopedBf16Copy const* s = t_bf16_copy; s != nullptr; s = s->outer_) {
    // Compared as addresses: the operand need not point into this copy's buffer at all.
    auto const at = reinterpret_cast<std::uintptr_t>(data), lo = reinterpret_cast<std::uintptr_t>(s->fp32_);
    if (at >= lo && (at - lo) % sizeof(float) == 0) {
      std::int64_t const offset = std::int64_t((at - lo) / sizeof(float));
      if (offset <= s->n_ && n <= s->n_ - offset) return s->bits_ + offset;
    }
  }
  return nullptr;
}

std::int64_t gemm_bf16_roundings() { return g_bf16_roundings.load(); }

std::uint64_t gemm_resources_generation(ExecSpace const& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  return CublasRegistry::get().generation(space.cuda_stream());
#else
  (void)space;
  return 0;
#endif
}

void release_gemm_resources(ExecSpace const& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  CublasRegistry::get().release(space.cuda_stream());
#else
  (void)space;
#endif
}

}  // namespace ktr
