#!/usr/bin/env bash
# Patches a *copy* of the Kokkos 3.4.01 sources so that they build with the CUDA toolkit in <cuda-home>
# (written for CUDA 13; the CUDA-13 API fixes are only applied when nvcc reports release >= 13) and know Hopper.
#
#   scripts/patch-kokkos-cuda.sh <kokkos-src-dir> <cuda-home> [<default arch, e.g. 90>]
#
# Called by scripts/bootstrap.sh on the copy in its temporary build folder; never point it at a source cache.
# The edits follow scripts/kokkos-patch-lib.sh's rules (a marker per fix; a missing pattern is an error).
# shellcheck disable=SC2016  # the single-quoted perl programs below are meant to be literal
set -euo pipefail

if (( $# < 2 || $# > 3 )); then echo "usage: $0 <kokkos-src-dir> <cuda-home> [<default arch>]" >&2; exit 2; fi
src=$1
cuda_home=$2
default_arch=${3:-90}
patch_tag=patch-kokkos-cuda
# shellcheck source=scripts/kokkos-patch-lib.sh disable=SC2034  # src, patch_tag: read by the library
source "$(dirname "${BASH_SOURCE[0]}")/kokkos-patch-lib.sh"
check_kokkos_34
[[ $default_arch =~ ^[0-9]+$ ]] || die "the default arch is a number such as 90 or 80, not '$default_arch'"

# --- CUDA version: version.json when the toolkit has one, else `nvcc --version` ("release 13.0, V13.0.88") -----
cuda_ver=
if [[ -f $cuda_home/version.json ]]; then
  cuda_ver=$(sed -n '/"cuda"/,/}/s/.*"version" *: *"\([0-9][0-9.]*\)".*/\1/p' "$cuda_home/version.json" | head -n1)
fi
if [[ -z $cuda_ver ]]; then
  [[ -x $cuda_home/bin/nvcc ]] || die "no $cuda_home/bin/nvcc"
  cuda_ver=$("$cuda_home/bin/nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n1)
fi
[[ $cuda_ver =~ ^([0-9]+)\.([0-9]+) ]] || die "cannot read the CUDA version of $cuda_home (got '$cuda_ver')"
cuda_major=${BASH_REMATCH[1]}
log "CUDA $cuda_ver in $cuda_home"

# --- always: nvcc_wrapper's default -arch -----------------------------------------------------------------------
# nvcc_wrapper adds -arch=sm_35 to every nvcc call that has no -arch of its own (CMake's compiler probes, and any
# consumer that does not go through Kokkos' CMake flags). sm_35 is gone since CUDA 12, so nvcc rejects it. Default
# to the build's architecture (sm_90 unless asked otherwise) and let NVCC_WRAPPER_DEFAULT_ARCH override it, as
# later Kokkos wrappers do. Builds configured by Kokkos' CMake pass their own -arch and are unaffected.
patch_src nvcc-default-arch bin/nvcc_wrapper \
  's/^default_arch="sm_35"\n/# ktr-patch(nvcc-default-arch): sm_35 was removed in CUDA 12; overridable default\ndefault_arch="\${NVCC_WRAPPER_DEFAULT_ARCH:-sm_'"$default_arch"'}"\n/m'

# --- always: Hopper (H100, H200): Kokkos_ARCH_HOPPER90 -> -arch=sm_90 ------------------------------------------
# Kokkos 3.4.01 stops at AMPERE86. Kokkos 4.x has the same option (Kokkos_ARCH_HOPPER90: -arch=sm_90, and the
# macros KOKKOS_ARCH_HOPPER90 and KOKKOS_ARCH_HOPPER); this adds exactly that, so one -DKokkos_ARCH_HOPPER90=ON
# works with both.
add_gpu_arch hopper90-arch HOPPER90 "NVIDIA Hopper generation CC 9.0" AMPERE86 CHECK_CUDA_ARCH sm_90 HOPPER

# --- always: the initialisation check accepts a device at least as new as the build ---------------------------
# Kokkos::Cuda::initialize launches a probe kernel and aborts unless the device's major compute capability equals
# the one the kernel was compiled for. A build's PTX is compiled just in time for a newer device (an sm_80 build
# runs on an sm_90 device), so refuse only a device *older* than the build, where no code of the build can run;
# the warning about a different (slower) architecture stays.
patch_src newer-device core/src/Cuda/Kokkos_Cuda_Instance.cpp \
  's#if \(compiled_major != cudaProp\.major \|\| compiled_minor > cudaProp\.minor\) \{#// ktr-patch(newer-device): a device at least as new as the build runs its code (PTX is compiled just in time)\n    if (compiled_major > cudaProp.major ||\n        (compiled_major == cudaProp.major && compiled_minor > cudaProp.minor)) {#'

# --- always: half_t -> __half conversions in Kokkos_Cuda_Half.hpp (the CUDA >= 11.1 branch) -------------------
# cast_from_half<T>(half_t val) calls __half2float(val), __half2int_rz(val), ... directly on a half_t, relying on
# a conversion to __half that does not exist (half_t's operator __half is explicit), and calls __half2double, which
# cuda_fp16 does not have. CUDA 13's front end rejects these non-dependent calls in the templates' definitions
# ("no suitable user-defined conversion from half_t to __half", "__half2double is undefined"). Convert explicitly
# with half_t::impl_type(val), as the file's own CUDA < 11.1 branch already does, and go through float for double.
# Also define the bool casts (cast_to_half(bool), cast_from_half<bool>) that this branch declares but never defines
# (nvcc warning #821 in every translation unit, and an undefined function for device code that uses them).
# Valid with every CUDA version; the 8 call sites must all be found.
patch_src half-conversions core/src/Cuda/Kokkos_Cuda_Half.hpp '
  s{(#else  // CUDA 11\.1 versions follow\n)(.*?)(\n#endif)}{
    my ($head, $body, $tail) = ($1, $2, $3);
    my $n = ($body =~ s/__half2double\(val\)/static_cast<T>(__half2float(half_t::impl_type(val)))/g);
    $n += ($body =~ s/\b(__half2(?:float|short_rz|ushort_rz|int_rz|uint_rz|ll_rz|ull_rz))\(val\)/$1(half_t::impl_type(val))/g);
    die "half-conversions: patched $n call sites, expected 8\n" unless $n == 8;
    die "half-conversions: bool casts already defined?\n" if $body =~ /cast_to_half\(bool val\)/;
    "$head// ktr-patch(half-conversions): explicit half_t -> __half (half_t::impl_type(val)), double via float\n$body" .
    "\n\n// ktr-patch(half-conversions): bool casts, declared above but only defined in the CUDA < 11.1 branch\n" .
    "KOKKOS_INLINE_FUNCTION\nhalf_t cast_to_half(bool val) { return cast_to_half(static_cast<float>(val)); }\n" .
    "template <class T>\nKOKKOS_INLINE_FUNCTION std::enable_if_t<std::is_same<T, bool>::value, T>\n" .
    "cast_from_half(half_t val) {\n  return static_cast<T>(cast_from_half<float>(val));\n}$tail"
  }se'

# --- always: kernel launches that stream capture can record ----------------------------------------------------
# A functor of 512 bytes or more is launched through constant memory: a host-side cudaEventSynchronize, a copy
# from one pinned staging buffer into the constant buffer, then the kernel. Inside a stream capture that records a
# copy from a host buffer that later launches overwrite (a replay would run with the wrong functor) and the next
# such launch synchronises on an event recorded in the capture (the capture fails). Pass functors below the 4 KiB
# kernel-argument limit as kernel arguments instead (what light-weight launches already do; later Kokkos
# versions avoid constant memory for captured work too). Larger functors still use constant memory.
patch_src capture-safe-launch core/src/Cuda/Kokkos_Cuda_Instance.hpp \
  's{static constexpr int ConstantMemoryUseThreshold = 0x000200 /\* 512 bytes \*/;}{// ktr-patch(capture-safe-launch): kernel arguments up to the 4 KiB limit, so stream capture records them\n  static constexpr int ConstantMemoryUseThreshold = KernelArgumentLimit;}'

if (( cuda_major >= 13 )); then
  # --- CUDA 13: cudaMemPrefetchAsync(ptr, n, cudaMemLocation, flags, stream) --------------------------------------
  # The int-device overload was removed; prefetch towards the space's device through a device cudaMemLocation.
  patch_src cuda13-prefetch core/src/Cuda/Kokkos_CudaSpace.cpp \
    's/CUDA_SAFE_CALL\(cudaMemPrefetchAsync\(ptr, bytes, space\.cuda_device\(\),\s*space\.cuda_stream\(\)\)\);/\/\/ ktr-patch(cuda13-prefetch): CUDA 13 takes a cudaMemLocation and a flags argument\n    cudaMemLocation ktr_loc{};\n    ktr_loc.type = cudaMemLocationTypeDevice;\n    ktr_loc.id   = space.cuda_device();\n    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, ktr_loc, 0, space.cuda_stream()));/'

  # --- CUDA 13: cudaMemAdvise(ptr, n, advice, cudaMemLocation) ----------------------------------------------------
  # Only compiled with KOKKOS_IMPL_DEBUG_CUDA_PIN_UVM_TO_HOST, but keep it valid: cudaCpuDeviceId -> host location.
  patch_src cuda13-memadvise core/src/Cuda/Kokkos_CudaSpace.cpp \
    's/cudaMemAdvise\(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation,\s*cudaCpuDeviceId\);/{ \/\/ ktr-patch(cuda13-memadvise): CUDA 13 takes a cudaMemLocation\n        cudaMemLocation ktr_loc{};\n        ktr_loc.type = cudaMemLocationTypeHost;\n        ktr_loc.id   = 0;\n        cudaMemAdvise(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation, ktr_loc);\n      }/'

  # --- CUDA 13: cudaGraphAddDependencies(graph, from, to, edgeData, n) --------------------------------------------
  # The edge-data variant (…_v2 in CUDA 12.3+) became the only one; nullptr = default edges, as before.
  patch_src cuda13-graph-deps core/src/Cuda/Kokkos_Cuda_Graph_Impl.hpp \
    's/^([ \t]*)CUDA_SAFE_CALL\(\s*cudaGraphAddDependencies\(m_graph, &pred_cuda_node, &cuda_node, 1\)\);/$1\/\/ ktr-patch(cuda13-graph-deps): CUDA 13 adds an edge-data argument (nullptr: default edges)\n$1CUDA_SAFE_CALL(cudaGraphAddDependencies(m_graph, &pred_cuda_node, &cuda_node,\n$1                                        nullptr, 1));/m'
fi

log "done (default arch sm_$default_arch)"
