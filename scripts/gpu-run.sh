#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and CUDA but no package registry: builds Kokkos 3.4.01 + Kokkos Kernels (CUDA,
# cuBLAS) and ktr from the sources in .device/ (see scripts/gpu-prepare.sh), runs the tests, `ktr bench kernels`,
# `ktr bench pipeline` and, where JAX is installed, the JAX peer on the same data, model and batch.
# Results go to ${OUT:-gpu-out}: logs, pipeline.json, pipeline.png.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
dev=$PWD/.device
jobs=$(nproc)
log() { echo "[gpu-run] $* ($(date +%T))"; }
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH

log "GoogleTest from source"
cmake -S "$dev/src/googletest" -B /tmp/gtest-build -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DBUILD_GMOCK=OFF >/dev/null &&
  cmake --build /tmp/gtest-build -j "$jobs" >/dev/null && cmake --install /tmp/gtest-build >/dev/null ||
  { echo "googletest build failed"; exit 1; }

log "Kokkos + Kokkos Kernels 3.4.01, CUDA (sm_80 PTX JIT-compiled for the GPU)"
root=$(KTR_NO_APT=1 KTR_TRILINOS_SRC="$dev/src" KTR_HOST_BLAS=none KTR_DEPS_CACHE=/tmp/ktr-deps KTR_JOBS=$jobs \
  scripts/bootstrap.sh cuda 2>"$out/bootstrap.log" | tail -n1) || { tail -30 "$out/bootstrap.log"; exit 1; }
root=${root#KTR_KOKKOS_ROOT=}

log "ktr (CUDA)"
cmake -S . -B build/gpu -DKokkos_ROOT="$root" -DKokkosKernels_ROOT="$root" -DCMAKE_CXX_COMPILER="$root/bin/nvcc_wrapper" \
  -DGTest_ROOT=/tmp/gtest -DZLIB_ROOT="$dev/zlib" -DZLIB_USE_STATIC_LIBS=ON -Dktr_ENABLE_BENCHMARKS=OFF \
  >"$out/configure.log" 2>&1 && cmake --build build/gpu -j "$jobs" >"$out/build.log" 2>&1 ||
  { tail -40 "$out/configure.log" "$out/build.log"; exit 1; }
build/gpu/apps/ktr info | tee "$out/info.txt"

log "tests"
(cd build/gpu && ctest --output-on-failure -j 4 2>&1) | tee "$out/tests.log" | tail -15

log "ktr bench kernels"
build/gpu/apps/ktr bench kernels 2>&1 | tee "$out/kernels.txt"

log "ktr bench pipeline"
build/gpu/apps/ktr bench pipeline --steps 128 --rounds 5 --json "$out/pipeline.json" --plot "$out/pipeline.png" 2>&1 |
  tee "$out/pipeline.txt"

log "training on Fashion-MNIST (MLP 5 epochs K=16, CNN 3 epochs K=16)"
build/gpu/apps/ktr train --data "$dev/data" --model mlp --epochs 5 --batch 256 2>&1 | tail -3 | tee "$out/train.txt"
build/gpu/apps/ktr train --data "$dev/data" --model cnn --epochs 3 --batch 32 2>&1 | tail -3 | tee -a "$out/train.txt"

if python3 -c "import jax, flax, optax" 2>/dev/null && [[ -f "$dev/jax_peer.py" ]]; then
  log "JAX peer (same data, model, batch, steps)"
  for m in "mlp 256" "cnn 32"; do
    set -- $m
    python3 "$dev/jax_peer.py" --data "$dev/data" --model "$1" --batch "$2" --steps 640 --k 4,16,64 2>&1 |
      grep '^peer=' | tee -a "$out/jax.txt"
  done
else
  log "JAX peer skipped (jax/flax/optax not importable)"
fi
log "done"
