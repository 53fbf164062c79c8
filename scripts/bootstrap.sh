#!/usr/bin/env bash
# Installs what ktr needs and builds Kokkos + Kokkos Kernels 3.4.01 from Debian's `trilinos` source
# package into a cache prefix outside the build tree, reused when present.
#
#   scripts/bootstrap.sh [openmp|openmp-mpi|serial-debian|cuda|hip]     (default: openmp)
#
# openmp-mpi installs its own packages (OpenMPI besides) and shares the OpenMP flavour's Kokkos.
# Prints `KTR_KOKKOS_ROOT=<prefix>` as its last line.
# For machines without a package registry (scripts/gpu-run.sh): KTR_NO_APT=1 skips apt, KTR_TRILINOS_SRC=DIR
# takes the kokkos/ and kokkos-kernels/ sources from DIR, KTR_HOST_BLAS=none builds Kokkos Kernels without a host
# BLAS (the CUDA flavour's default). If Kokkos_ROOT is already set in the environment the
# bootstrap steps aside and echoes it back. The cache lives in ${KTR_DEPS_CACHE:-~/.cache/ktr}, one folder per
# Kokkos version, flavour and architecture (plus a recipe number, bumped when the recipe changes).
# GPU architectures: KTR_CUDA_ARCH=90|80|86 (default 90, sm_90: H100/H200), KTR_HIP_ARCH=gfx90a|gfx908 (default
# gfx90a: MI210/MI250/MI250X).
set -euo pipefail

flavour=${1:-openmp}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KTR_DEPS_CACHE:-$HOME/.cache/ktr}
jobs=${KTR_JOBS:-$(nproc)}
log() { echo "[bootstrap] $*" >&2; }

if [[ -n "${Kokkos_ROOT:-}" ]]; then
  log "Kokkos_ROOT is set: using $Kokkos_ROOT, nothing to build"
  echo "KTR_KOKKOS_ROOT=$Kokkos_ROOT"
  exit 0
fi

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# --- apt packages -------------------------------------------------------------------------------------------
# Every package whose files the build hands to CMake is named in scripts/packages.sh, per flavour;
# scripts/check-deps.sh verifies that after the build (CI runs it).
source "$here/packages.sh"
pkgs=$(ktr_packages "$flavour") || exit 2
read -r -a base_pkgs <<<"$pkgs"
missing=()
for p in "${base_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# deb-src lines, derived from the machine's own deb822 / one-line sources (no host name is written here).
enable_deb_src() {
  if apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -q '^Sources$'; then return; fi
  local out=/etc/apt/sources.list.d/ktr-deb-src
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ $f == "$out.sources" ]] && continue
      grep -q '^Types:.*\bdeb\b' "$f" || continue
      # only Debian's own archive stanzas: those signed by the Debian archive keyring
      awk 'BEGIN{RS=""; ORS="\n\n"} /debian-archive-keyring/ {sub(/Types: deb\n/, "Types: deb-src\n"); print}' \
        "$f"
    done | as_root tee "$out.sources" >/dev/null
  fi
  if [[ -f /etc/apt/sources.list ]]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | as_root tee "$out.list" >/dev/null || true
  fi
  need_update=1
}

need_update=0
# From here on, the Kokkos build: a flavour that only adds packages (openmp-mpi) uses its base flavour's.
flavour=${flavour%-mpi}
src_key=kokkos-3.4.01
# Bump a flavour's recipe number when its build recipe below changes: the cache key changes with it.
case $flavour in openmp) recipe=4 ;; cuda) recipe=5 ;; hip) recipe=3 ;; *) recipe=1 ;; esac
# Host code is built for this machine's vector ISA through Kokkos's own architecture option (ktr inherits
# Kokkos's flags and sets none itself): AVX2 + FMA -> Kokkos_ARCH_HSW (-march=core-avx2); AVX-512 (F, CD, BW, DQ,
# VL) -> Kokkos_ARCH_SKX (-march=skylake-avx512), where ktr's direct kernels use 16-float packs. The cache key
# names it.
has_flags() { local f; for f in "$@"; do grep -qw "$f" /proc/cpuinfo || return 1; done; }
host_arch=generic
if [[ $flavour == openmp ]]; then
  if has_flags avx512f avx512cd avx512bw avx512dq avx512vl; then host_arch=skx
  elif has_flags avx2 fma; then host_arch=hsw; fi
fi
arch_key=$host_arch
# GPU flavours name their device architecture instead: KTR_CUDA_ARCH (90: Hopper, H100/H200, the default; 80:
# Ampere A100) and KTR_HIP_ARCH (gfx90a: MI200 series, the default; gfx908: MI100). Kokkos 3.4.01 predates both
# Kokkos_ARCH_HOPPER90 and Kokkos_ARCH_VEGA90A: scripts/patch-kokkos-{cuda,hip}.sh add them as Kokkos 4.x has them.
case $flavour in
  cuda)
    cuda_arch=${KTR_CUDA_ARCH:-90}
    case $cuda_arch in
      90) cuda_arch_opt=Kokkos_ARCH_HOPPER90 ;; 80) cuda_arch_opt=Kokkos_ARCH_AMPERE80 ;;
      86) cuda_arch_opt=Kokkos_ARCH_AMPERE86 ;;
      *) echo "bootstrap: KTR_CUDA_ARCH=$cuda_arch: choose 90 (H100/H200), 80 (A100) or 86" >&2; exit 2 ;;
    esac
    arch_key=sm$cuda_arch ;;
  hip)
    hip_arch=${KTR_HIP_ARCH:-gfx90a}
    case $hip_arch in
      gfx90a) hip_arch_opt=Kokkos_ARCH_VEGA90A ;; gfx908) hip_arch_opt=Kokkos_ARCH_VEGA908 ;;
      *) echo "bootstrap: KTR_HIP_ARCH=$hip_arch: choose gfx90a (MI210/MI250/MI250X) or gfx908 (MI100)" >&2; exit 2 ;;
    esac
    arch_key=$hip_arch ;;
esac
prefix="$cache/$src_key-$flavour-$arch_key-r$recipe"
if [[ ${KTR_NO_APT:-0} == 1 ]]; then
  missing=()
elif [[ $flavour != serial-debian && ! -f "$prefix/.complete" && -z ${KTR_TRILINOS_SRC:-} ]]; then
  enable_deb_src
fi
if (( ${#missing[@]} )) || (( need_update )); then
  log "apt: installing ${missing[*]:-(sources only)}"
  as_root apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  (( ${#missing[@]} )) && as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
fi

if [[ $flavour == serial-debian ]]; then
  # Debian's binary Kokkos (Serial only); cmake/ktrKokkosShim.cmake adapts its CMake config.
  echo "KTR_KOKKOS_ROOT=/usr"
  exit 0
fi

if [[ -f "$prefix/.complete" ]]; then
  log "reusing $prefix"
  echo "KTR_KOKKOS_ROOT=$prefix"
  exit 0
fi

# --- sources: only packages/kokkos and packages/kokkos-kernels out of the orig tarball ----------------------
src=${KTR_TRILINOS_SRC:-$cache/src-trilinos-13.2.0}
if [[ -n ${KTR_TRILINOS_SRC:-} ]]; then
  [[ -d $src/kokkos && -d $src/kokkos-kernels ]] || { echo "bootstrap: $src lacks kokkos/ or kokkos-kernels/" >&2; exit 1; }
elif [[ ! -f "$src/.complete" ]]; then
  log "fetching the trilinos source package"
  rm -rf "$src" && mkdir -p "$src/dl"
  (cd "$src/dl" && apt-get source --download-only -q trilinos >/dev/null 2>&1)
  tarball=$(ls "$src"/dl/trilinos_*.orig.tar.* | head -n1)
  tar xf "$tarball" -C "$src" --strip-components=2 --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  rm -rf "$src/dl"
  touch "$src/.complete"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ktr-bootstrap.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$src/kokkos" "$src/kokkos-kernels" "$work/"

# Position-independent: libktr_c.so (the C and Fortran API) carries Kokkos and Kokkos Kernels inside.
kokkos_opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DKokkos_ENABLE_SERIAL=ON
             -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
# Host BLAS: OpenBLAS. For the OpenMP flavour, Debian's OpenMP build of it, so that gemm and Kokkos share one
# libgomp thread pool; with the pthread build both keep their own threads and spin against each other (on two
# cores that halved the MLP step rate). The library is linked by full path, so ktr's RPATH selects it.
multiarch=$(gcc -print-multiarch)
blas_variant=$([[ $flavour == openmp ]] && echo openblas-openmp || echo openblas-pthread)
kk_opts=(-DCMAKE_BUILD_TYPE=Release -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_ENABLE_TESTS=OFF
         -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
# The CUDA flavour has none: its binaries travel to a GPU machine, and OpenBLAS would need libopenblas and
# libgfortran there (gemm runs in cuBLAS; Kokkos Kernels' own host gemm serves the rare host call).
host_blas=${KTR_HOST_BLAS:-$([[ $flavour == cuda ]] && echo none || echo openblas)}
if [[ $host_blas == openblas ]]; then
  blas_dir=/usr/lib/$multiarch/$blas_variant
  # Fail here, naming the package, rather than deep inside Kokkos Kernels' configure.
  [[ -e $blas_dir/libopenblas.so ]] ||
    { echo "bootstrap: $blas_dir/libopenblas.so is missing: install lib$blas_variant-dev" >&2; exit 1; }
  kk_opts+=(-DKokkosKernels_ENABLE_TPL_BLAS=ON -DBLAS_LIBRARIES=openblas -DBLAS_LIBRARY_DIRS="$blas_dir")
fi
case $flavour in
  openmp)
    kokkos_opts+=(-DKokkos_ENABLE_OPENMP=ON)
    [[ $host_arch == hsw ]] && kokkos_opts+=(-DKokkos_ARCH_HSW=ON)
    [[ $host_arch == skx ]] && kokkos_opts+=(-DKokkos_ARCH_SKX=ON)
    ;;
  cuda)
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    [[ -x $cuda_home/bin/nvcc ]] || { echo "bootstrap: no nvcc in $cuda_home/bin (set CUDA_HOME to the CUDA toolkit)" >&2; exit 1; }
    "$here/patch-kokkos-cuda.sh" "$work/kokkos" "$cuda_home" "$cuda_arch"
    kokkos_opts+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON "-D$cuda_arch_opt=ON"
                  -DCMAKE_CXX_COMPILER="$work/kokkos/bin/nvcc_wrapper" -DCUDAToolkit_ROOT="$cuda_home")
    kk_opts+=(-DCMAKE_CXX_COMPILER="$work/kokkos/bin/nvcc_wrapper" -DKokkosKernels_ENABLE_TPL_CUBLAS=ON
              -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF)
    export NVCC_WRAPPER_DEFAULT_COMPILER=${CXX:-g++} CUDA_ROOT=$cuda_home PATH="$cuda_home/bin:$PATH"
    ;;
  hip)
    "$here/patch-kokkos-hip.sh" "$work/kokkos"
    kokkos_opts+=(-DKokkos_ENABLE_HIP=ON "-D$hip_arch_opt=ON" -DCMAKE_CXX_COMPILER=hipcc)
    kk_opts+=(-DCMAKE_CXX_COMPILER=hipcc)
    ;;
  *) echo "bootstrap: unknown flavour '$flavour' (openmp|serial-debian|cuda|hip)" >&2; exit 2 ;;
esac

rm -rf "$prefix"
log "building Kokkos 3.4.01 ($flavour) into $prefix"
cmake -S "$work/kokkos" -B "$work/build-kokkos" -DCMAKE_INSTALL_PREFIX="$prefix" "${kokkos_opts[@]}" >"$work/kokkos.log" 2>&1 \
  && cmake --build "$work/build-kokkos" -j "$jobs" >>"$work/kokkos.log" 2>&1 \
  && cmake --install "$work/build-kokkos" >>"$work/kokkos.log" 2>&1 \
  || { tail -n 40 "$work/kokkos.log" >&2; exit 1; }
log "building Kokkos Kernels 3.4.01 ($flavour, no pre-instantiation, host BLAS: $host_blas)"
cmake -S "$work/kokkos-kernels" -B "$work/build-kk" -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
  "${kk_opts[@]}" >"$work/kk.log" 2>&1 \
  && cmake --build "$work/build-kk" -j "$jobs" >>"$work/kk.log" 2>&1 \
  && cmake --install "$work/build-kk" >>"$work/kk.log" 2>&1 \
  || { tail -n 40 "$work/kk.log" >&2; exit 1; }
touch "$prefix/.complete"
echo "KTR_KOKKOS_ROOT=$prefix"
