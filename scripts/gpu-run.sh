#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU, the CUDA toolkit, cmake, g++ and python3 but no package registry:
#   1. builds GoogleTest, Kokkos + Kokkos Kernels 3.4.01 (CUDA, cuBLAS) and ktr from .device/ (scripts/gpu-prepare.sh)
#   2. runs every test (the capture tests included: on CUDA they run, nowhere else)
#   3. `ktr bench kernels`, `ktr bench pipeline` (naive, resident, multistep-K, graph-K) in FP32 and in TF32
#   4. the JAX peer on the same GPU, twice: --precision highest (FP32 matmuls) and --precision default (TF32)
#   5. a short training run per model through the CLI, and an nsys profile of graph-16 where nsys exists
# and writes ${OUT:-gpu-out}/results.md: every figure, and the ktr/JAX ratios at equal precision.
# Budget: under ten minutes on a 16-core machine. Usage: scripts/gpu-prepare.sh (here), then on the GPU machine
# scripts/gpu-run.sh.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mkdir -p "${OUT:-gpu-out}" && cd "${OUT:-gpu-out}" && pwd)
dev=$PWD/.device
jobs=$(nproc)
t0=$(date +%s)
log() { echo "[gpu-run] $* (t+$(($(date +%s) - t0))s)" | tee -a "$out/timeline.txt"; }
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH=$CUDA_HOME/bin:$PATH
[[ -f $dev/src.tar.gz ]] || { echo "gpu-run: $dev/src.tar.gz is missing: run scripts/gpu-prepare.sh first" >&2; exit 1; }
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

src=/tmp/ktr-gpu-src
log "unpacking the carried sources"
rm -rf "$src" && mkdir -p "$src" && tar xzf "$dev/src.tar.gz" -C "$src" || exit 1

log "GoogleTest from source"
cmake -S "$src/googletest" -B /tmp/gtest-build -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DBUILD_GMOCK=OFF >/dev/null &&
  cmake --build /tmp/gtest-build -j "$jobs" >/dev/null && cmake --install /tmp/gtest-build >/dev/null ||
  { echo "googletest build failed"; exit 1; }

log "Kokkos + Kokkos Kernels 3.4.01, CUDA (sm_80 PTX, JIT-compiled for the GPU)"
root=$(KTR_NO_APT=1 KTR_TRILINOS_SRC="$src" KTR_HOST_BLAS=none KTR_DEPS_CACHE=/tmp/ktr-deps KTR_JOBS=$jobs \
  scripts/bootstrap.sh cuda 2>"$out/bootstrap.log" | tail -n1) || { tail -30 "$out/bootstrap.log"; exit 1; }
root=${root#KTR_KOKKOS_ROOT=}
# A persistent JIT cache: the PTX of every kernel is compiled once for this GPU, not once per process.
export CUDA_CACHE_PATH=/tmp/ktr-cuda-cache CUDA_CACHE_MAXSIZE=1073741824

log "ktr (CUDA)"
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$root" -DKokkosKernels_ROOT="$root" \
  -DCMAKE_CXX_COMPILER="$root/bin/nvcc_wrapper" -DGTest_ROOT=/tmp/gtest -DZLIB_ROOT="$dev/zlib" \
  -DZLIB_USE_STATIC_LIBS=ON -Dktr_ENABLE_BENCHMARKS=OFF >"$out/configure.log" 2>&1 && cmake --build build/gpu -j "$jobs" >"$out/build.log" 2>&1 ||
  { tail -40 "$out/configure.log" "$out/build.log"; exit 1; }
ktr=build/gpu/apps/ktr
$ktr info | tee "$out/info.txt"

log "tests"
(cd build/gpu && timeout 300 ctest --output-on-failure -j 4 2>&1) >"$out/tests.log"
tail -15 "$out/tests.log"
build/gpu/tests/ktr_tests --gtest_filter='Capture.*' >"$out/capture-tests.log" 2>&1
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$out/capture-tests.log"

log "ktr bench kernels"
timeout 120 $ktr bench kernels >"$out/kernels.txt" 2>&1
cat "$out/kernels.txt"

for precision in fp32 tf32; do
  log "ktr bench pipeline ($precision)"
  timeout 150 $ktr bench pipeline --precision $precision --k 4,16,64 --steps 128 --rounds 5 \
    --json "$out/pipeline-$precision.json" >"$out/pipeline-$precision.txt" 2>&1
  cat "$out/pipeline-$precision.txt"
done

peer=../shared/peers/jax_peer.py
[[ -f $peer ]] || peer=$dev/jax_peer.py
: >"$out/jax.txt"
if python3 -c "import jax, flax, optax" 2>"$out/jax-import.log"; then
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())" >>"$out/jax-import.log" 2>&1
  for precision in highest default; do
    for m in "mlp 256" "cnn 32"; do
      set -- $m
      log "JAX peer: $1, batch $2, --precision $precision"
      timeout 150 python3 "$peer" --data "$dev/data" --model "$1" --batch "$2" --steps 640 --k 4,16,64 \
        --precision $precision 2>>"$out/jax-errors.log" | grep '^peer=' | tee -a "$out/jax.txt"
    done
  done
else
  log "JAX peer not run: jax, flax or optax is not importable here (see jax-import.log)"
fi

log "training through the CLI (MLP 2 epochs, CNN 1 epoch, K=16)"
timeout 90 $ktr train --data "$dev/data" --model mlp --epochs 2 --batch 256 >"$out/train.txt" 2>&1
timeout 90 $ktr train --data "$dev/data" --model cnn --epochs 1 --batch 32 >>"$out/train.txt" 2>&1
grep -E 'dispatch:|epoch|capturing' "$out/train.txt" | tail -8

nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n1)
if [[ -n $nsys ]]; then
  log "where the time goes: nsys on the MLP pipeline (multistep-16, graph-16)"
  timeout 120 "$nsys" profile -o /tmp/ktr-nsys --force-overwrite true --stats=false $ktr bench pipeline \
    --models mlp --k 16 --steps 64 --rounds 2 >/dev/null 2>&1 &&
    timeout 60 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum --format csv /tmp/ktr-nsys.nsys-rep \
      >"$out/nsys.txt" 2>&1
else
  log "nsys not found: no profile"
fi

log "results"
python3 scripts/gpu-results.py "$out" | tee "$out/results.md"
log "done"
