// The host BLAS (OpenBLAS where it is linked): its kernel choice on CPUs it does not know, its threads, its name.
#pragma once

#include <string>

namespace ktr {

/// Gives the host BLAS (if it is OpenBLAS) `threads` threads, so that it matches Kokkos's host concurrency.
void set_host_blas_threads(int threads);
/// Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels by CPU model, and takes a model newer than it knows
/// (Intel's Emerald Rapids, family 6 model 207) for a Prescott: SSE3 kernels, 4x slower at ktr's MLP than its
/// SkylakeX ones. Where it did so on a CPU with AVX2 + FMA, this selects the kernels OPENBLAS_CORETYPE would
/// (SkylakeX with AVX-512 F/BW/DQ/VL, else Haswell), unless OPENBLAS_CORETYPE is set: that choice is kept, and
/// host_blas() says so where it holds an AVX-512 CPU to AVX2 kernels. Call before any host BLAS
/// call, from one thread (ktr's Runtime does, when it starts Kokkos); returns what it did ("" if nothing).
std::string select_host_blas_kernels();

/// The host BLAS linked into this process, e.g. "OpenBLAS 0.3.21 ... (openblas_get_config)", or "none found".
std::string host_blas();

namespace impl {
/// openblas_get_config()'s text where the host BLAS is OpenBLAS, else "".
std::string openblas_config();
}  // namespace impl

}  // namespace ktr
