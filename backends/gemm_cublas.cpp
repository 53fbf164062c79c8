// gemm on CUDA: cuBLAS on the instance's stream, through one handle per stream with a workspace ktr owns.
#include "gemm_backends.hpp"

#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "kokkos_compat.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <library_types.h>

#include <map>
#include <mutex>
#include <string>

namespace ktr::impl {

namespace {

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
}  // namespace

void gemm_cublas(ExecSpace const& space, MatmulPrecision precision, bool trans_a, bool trans_b, float alpha,
                 ConstMatrix const& a, std::uint16_t const* a16, ConstMatrix const& b, std::uint16_t const* b16,
                 float beta, Matrix const& c) {
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
    if (a16 == nullptr || b16 == nullptr) {  // what no bf16 copy holds, rounded into the stream's buffer
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
}

void column_sums_cublas(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums) {
  std::int64_t const rows = std::int64_t(x.extent(0)), cols = std::int64_t(x.extent(1));
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
}

std::uint64_t cublas_generation(ExecSpace const& space) {
  return CublasRegistry::get().generation(space.cuda_stream());
}

void cublas_release(ExecSpace const& space) { CublasRegistry::get().release(space.cuda_stream()); }

}  // namespace ktr::impl

#endif  // KOKKOS_ENABLE_CUDA
