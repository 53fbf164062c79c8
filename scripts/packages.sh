# The Debian packages each build flavour needs, sourced by scripts/bootstrap.sh and scripts/check-deps.sh.
# Every package whose files a build hands to CMake is named here (check-deps.sh verifies it after a build).
# The host BLAS variant is named explicitly: libopenblas-dev is satisfied by any one variant, so the one whose
# library folder the bootstrap uses must be installed by name.
ktr_packages() {
  local common="cmake g++ make ninja-build zlib1g-dev nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev dataset-fashion-mnist gnuplot-nox dpkg-dev libyaml-cpp-dev gfortran pkgconf"
  case $1 in
    # libdnnl-dev: oneDNN, host bf16 matmuls (its CMake config finds OpenCL: ocl-icd-opencl-dev, opencl-c-headers)
    openmp) echo "$common libopenblas-dev libopenblas-openmp-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers" ;;
    # data parallelism: the OpenMP flavour with OpenMPI (headers, libraries, mpirun); CMake's FindMPI runs pkg-config
    openmp-mpi) echo "$common libopenblas-dev libopenblas-openmp-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libopenmpi-dev openmpi-bin pkgconf" ;;
    # no host BLAS: the binaries travel to a GPU machine (scripts/bootstrap.sh). CMake's FindCUDAToolkit looks for
    # an OpenCL library beside cuBLAS; the toolkit ships none, so it records the system's libOpenCL.so (nothing links
    # it: scripts/check-travel.sh) wherever ocl-icd-opencl-dev is installed, as the host flavours install it
    cuda) echo "$common ocl-icd-opencl-dev" ;;
    # hipcc is clang: CMake picks LLVM's binutils (llvm, lld) beside it
    hip) echo "$common libopenblas-dev libopenblas-pthread-dev hipcc libamdhip64-dev rocm-device-libs llvm lld" ;;
    fuzz) echo "clang libclang-rt-14-dev zlib1g-dev nlohmann-json3-dev libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libopenblas-dev" ;;
    # scripts/bench-blas.sh: the host BLAS candidates, both OpenMP builds (they share ktr's thread pool)
    blas-compare) echo "libopenblas-openmp-dev libblis-openmp-dev" ;;
    serial-debian) echo "$common libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers" ;;
    *) echo "packages.sh: unknown flavour '$1' (openmp|openmp-mpi|serial-debian|cuda|hip|fuzz|blas-compare)" >&2; return 2 ;;
  esac
}

# Installs a flavour's packages that are missing (apt waits up to 10 minutes for another apt to finish).
ktr_install_packages() {
  local pkgs missing=() p
  pkgs=$(ktr_packages "$1") || return 2
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "[packages] apt: installing ${missing[*]}" >&2
  local sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
}
