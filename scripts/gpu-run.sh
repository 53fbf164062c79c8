#!/usr/bin/env bash
# One lent GPU run (an NVIDIA H200: 15 minutes of lease with its start, one command of at most 10 minutes, at most
# 8 files back from $OUT). Runs the binaries scripts/gpu-prepare.sh put in .device/ (it compiles nothing) and, after
# every stage, rewrites exactly two files in $OUT: results.md (every figure so far, the ktr/JAX ratios at equal
# precision, each stage's outcome and time) and logs.tgz (everything else, under 16 MiB). A run killed at any point
# still returns what it measured. The whole run stops itself at its deadline (KTR_GPU_DEADLINE_S, 400 s).
#
#   stage         limit  what
#   libs           10 s  find libcublas.so.13 (ldconfig, $CUDA_HOME, every Python's wheels), set LD_LIBRARY_PATH;
#                        stops with ldd's output if the binaries miss a library
#   info           15 s  nvidia-smi, `ktr info` (stops the run if ktr cannot start on the GPU)
#   capture        20 s  ktr_tests --gtest_filter='Capture.*' (the stream-capture tests only run on a GPU)
#   train          20 s  ktr train: the MLP (1 epoch) and the SimpleCNN (1 epoch) on Fashion-MNIST
#   pipeline-fp32  30 s  ktr bench pipeline: naive, resident, multistep-K, graph-K, every session FP32
#   jax-highest   100 s  the JAX peer (MLP, CNN) at --precision highest (FP32 matmuls), if jax runs on the GPU
#   pipeline-tf32  30 s  the same as pipeline-fp32, every session TF32
#   jax-default    80 s  the JAX peer at --precision default (TF32)
#   bf16           55 s  ktr train --precision bf16 (MLP, SimpleCNN: 1 epoch each; the train stage's fp32 beside it)
#                        and ktr's own bf16 JAX peer (bench/peers/jax_bf16_peer.py: Flax mixed precision)
#   tests          40 s  the GPU-labelled tests first (gpu_tests below: streams, devices, precisions), then every
#                        other ktr_tests test, one process (the CLI, install and example tests need a build)
# The limits add up to the deadline (the run refuses to start otherwise, the dry run included). Each stage gets its
# limit or what is left before the deadline, whichever is less; a stage with under 5 s left is skipped and says
# so. Stages after a failed one still run (only libs and info stop the run). The pipeline benchmark rewrites its
# JSON after every round, so a stage cut by its limit still reports the rounds it timed.
#
#   OUT=DIR scripts/gpu-run.sh                        (default OUT: gpu-out)
#   KTR_GPU_DRY_RUN=1      no GPU needed: every stage says what it would run; results.md and logs.tgz are written
#                          after each stage as in a real run (CI runs this)
#   KTR_GPU_BUILD_FROM_SOURCE=1  fallback: build Kokkos, Kokkos Kernels and ktr on the GPU machine from
#                          .device/src.tar.gz (KTR_GPU_SOURCE=1 scripts/gpu-prepare.sh) instead of carrying binaries;
#                          takes longer than one command may run on 16 cores, so the measuring stages get less time
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
repo=$PWD
t0=$(date +%s)
deadline=$((t0 + ${KTR_GPU_DEADLINE_S:-400}))
dry=${KTR_GPU_DRY_RUN:-0}
# The stages in order, name:limit:function; libs and info come first (a failure there stops the run).
stages=(libs:10:run_libs info:15:run_info capture:20:run_capture train:20:run_train pipeline-fp32:30:pipeline_fp32
        jax-highest:100:jax_highest pipeline-tf32:30:pipeline_tf32 jax-default:80:jax_default bf16:55:run_bf16
        tests:40:run_tests)
limit_of() { local e; for e in "${stages[@]}"; do [[ ${e%%:*} == "$1" ]] && cut -d: -f2 <<<"$e"; done; }
total=0
for entry in "${stages[@]}"; do total=$((total + $(cut -d: -f2 <<<"$entry"))); done
if ((total > ${KTR_GPU_DEADLINE_S:-400})); then
  echo "gpu-run: the stage limits add up to ${total} s, over the ${KTR_GPU_DEADLINE_S:-400} s deadline" >&2
  exit 1
fi
mkdir -p "${OUT:-gpu-out}" && out=$(cd "${OUT:-gpu-out}" && pwd)
logs=$(mktemp -d "${TMPDIR:-/tmp}/ktr-gpu-logs.XXXXXX")
dev=$repo/.device
bin=$dev/bin
data=$dev/data
# gpu-prepare.sh carries the binaries gzipped: unpacked here, outside the working tree.
if [[ $dry != 1 && -f $bin/ktr.gz ]]; then
  unpacked=$(mktemp -d "${TMPDIR:-/tmp}/ktr-gpu-bin.XXXXXX")
  for b in ktr ktr_tests; do gzip -dc "$bin/$b.gz" >"$unpacked/$b" && chmod +x "$unpacked/$b"; done
  bin=$unpacked
fi
# The tests a GPU run executes first: those that exist for GPUs (streams, instances, devices, precisions).
gpu_tests='Capture.*:CApi.StepsOnACallersStream*:CApi.DevicesAreTheBuildsOwn:CApi.TrainOnDeviceReadableData*'
gpu_tests+=':CApi.DeviceArraysAreReadInPlace:TorchFort.DeviceCpuRunsOnAGpuBuildsGpuWithAWarning:Ops.ColumnSums*'
gpu_tests+=':Layers.DenseNarrowAndWide*:Trainer.DispatchEvaluationAndSaveNeverFenceTheWholeDevice:PipelineBench.*'
gpu_tests+=':Bf16.*:Golden.*'
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export KTR_LOGS=$logs

# results.md and logs.tgz, rewritten whole (through hidden temporaries) after every stage: nothing else in $OUT.
publish() {
  if ! python3 "$repo/scripts/gpu-results.py" "$logs" >"$out/.results.md.tmp" 2>"$logs/results-error.log"; then
    { echo "# ktr GPU run (gpu-results.py failed: see logs.tgz, results-error.log)"; echo; echo '```';
      cat "$logs/stages.txt" 2>/dev/null; echo '```'; } >"$out/.results.md.tmp"
  fi
  mv -f "$out/.results.md.tmp" "$out/results.md"
  # Logs over 2 MiB keep their last 2 MiB, so the archive stays far below 16 MiB.
  find "$logs" -type f -size +2M -exec sh -c 'tail -c 2097152 "$1" >"$1.tail" && mv "$1.tail" "$1"' _ {} \;
  tar czf "$out/.logs.tgz.tmp" -C "$logs" . && mv -f "$out/.logs.tgz.tmp" "$out/logs.tgz"
  local extra
  extra=$(find "$out" -mindepth 1 -maxdepth 1 ! -name results.md ! -name logs.tgz -printf '%f ')
  if [[ -n $extra ]]; then
    echo "[gpu-run] WARNING: $out also holds: $extra(not written by this run)" >&2
    [[ $dry == 1 ]] && { echo "[gpu-run] dry run: \$OUT must hold results.md and logs.tgz alone" >&2; exit 1; }
  fi
}

# stage <name> <limit s> <function>: runs the function under min(limit, time left), its output in <name>.log.
stage() {
  local name=$1 cap=$2 fn=$3 now left limit rc status
  now=$(date +%s)
  left=$((deadline - now))
  limit=$((cap < left ? cap : left))
  if ((limit < 5)); then
    status="skipped (deadline: ${left} s left)"
    rc=0
    echo "skipped: the run's deadline is ${left} s away" >"$logs/$name.log"
  elif [[ $dry == 1 ]]; then
    { echo "dry run: would run, within ${limit} s:"; declare -f "$fn" | tail -n +3 | head -n -1; } >"$logs/$name.log"
    status="dry run"
    rc=0
  else
    timeout -k 5 "$limit" bash -o pipefail -c "$fn" >"$logs/$name.log" 2>&1
    rc=$?
    case $rc in 0) status=ok ;; 124 | 137) status="timed out at ${limit} s" ;; *) status="failed (exit $rc)" ;; esac
  fi
  local secs=$(($(date +%s) - now))
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$secs" "$cap" >>"$logs/stages.txt"
  echo "[gpu-run] $name: $status, ${secs} s (limit ${cap} s; t+$(($(date +%s) - t0)) s)" >&2
  publish
  return $rc
}

# --- the stages (each runs in its own bash, with the variables exported below) --------------------------------
# The Pythons that may have JAX (and the NVIDIA wheels): PATH's, the system's, /opt/*'s and their virtual
# environments (hidden .venv folders too), an active venv's. Paths stay as found: a venv's python3 is a link to the
# system's, and only through the link does it see the venv's packages.
pythons() {
  local p
  for p in python3 ${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python3} /opt/*/.venv/bin/python3 /opt/*/venv/bin/python3 \
    /opt/*/bin/python3 /opt/*/*/bin/python3 /usr/bin/python3; do
    p=$(command -v "$p" 2>/dev/null) && [[ -x $p ]] && echo "$p"
  done | awk '!seen[$0]++'
}
# Every site-packages folder of those Pythons, one per line.
site_dirs() {
  local py
  pythons | while read -r py; do
    "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null
  done | awk 'NF && !seen[$0]++'
}
run_libs() {
  # libcublas.so.13 (and libcublasLt): the loader's cache, the toolkit, then the Python wheels (nvidia-cublas).
  local dir="" d candidates=()
  if ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13 '; then
    echo "libcublas.so.13: in the loader's cache"
  else
    candidates=("$CUDA_HOME/lib64" "$CUDA_HOME/lib" /usr/local/cuda*/lib64 /usr/local/cuda*/targets/x86_64-linux/lib)
    while read -r d; do candidates+=("$d/nvidia/cublas/lib" "$d/nvidia/cu13/lib"); done < <(site_dirs)
    for d in "${candidates[@]}"; do
      if [[ -e $d/libcublas.so.13 ]]; then dir=$d; break; fi
    done
    [[ -n $dir ]] || { echo "libcublas.so.13 not found in:"; printf '  %s\n' "${candidates[@]}"; exit 1; }
    echo "libcublas.so.13: $dir"
  fi
  echo "$dir" >"$KTR_LOGS/ld_library_path"
  local need have
  need=$(sed -n 's/^glibc needed: //p' "$KTR_DEVICE/MANIFEST" 2>/dev/null)
  have=$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)
  echo "glibc: $have here, $need needed"
  if [[ -n $need && $(printf '%s\n' "$need" "$have" | sort -V | head -n1) != "$need" ]]; then
    echo "the binaries need glibc $need, this machine has $have: rebuild with KTR_GPU_BUILD_FROM_SOURCE=1"
    exit 1
  fi
  local b listing
  for b in "$KTR_BIN/ktr" "$KTR_BIN/ktr_tests"; do
    listing=$(LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$b" 2>&1)
    printf '%s:\n%s\n' "$b" "$listing" >>"$KTR_LOGS/ldd.txt"
    if grep -q 'not found' <<<"$listing"; then echo "$b misses libraries:"; echo "$listing"; exit 1; fi
  done
  echo "every library found"
}
run_info() {
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv | tee "$KTR_LOGS/gpu.txt"
  "$KTR_BIN/ktr" info | tee "$KTR_LOGS/info.txt"
}
run_capture() { "$KTR_BIN/ktr_tests" --gtest_filter='Capture.*'; }
pipeline() {
  "$KTR_BIN/ktr" bench pipeline --precision "$1" --k 4,16,64 --steps 1024 --rounds 5 \
    --json "$KTR_LOGS/pipeline-$1.json"
}
pipeline_fp32() { pipeline fp32; }
pipeline_tf32() { pipeline tf32; }
jax_peer() {
  # The first Python with JAX, Flax and Optax, run with the environment the run started with (ktr's
  # LD_LIBRARY_PATH could make JAX load another cuBLAS than its own wheels').
  jax_env() {
    if [[ -n ${KTR_OUTER_LD_LIBRARY_PATH+x} ]]; then LD_LIBRARY_PATH=$KTR_OUTER_LD_LIBRARY_PATH "$@"
    else env -u LD_LIBRARY_PATH "$@"; fi
  }
  local py="" p
  while read -r p; do
    if jax_env "$p" -c 'import jax, flax, optax' 2>/dev/null; then py=$p; break; fi
  done < <(pythons)
  [[ -n $py ]] || { echo "no Python with jax, flax and optax among: $(pythons | tr '\n' ' ')"; exit 1; }
  jax_env "$py" -c "import jax, flax, optax; b = jax.default_backend(); print('jax', jax.__version__, 'backend', b, \
jax.devices()); assert b == 'gpu', 'JAX runs on ' + b + ', not the GPU: no peer figures'" || exit 1
  echo "python: $py"
  local precision=$1 peer=${2:-$KTR_PEER} model batch
  [[ -f $peer ]] || { echo "no JAX peer ($peer): not carried"; exit 1; }
  for model in mlp cnn; do
    batch=$([[ $model == mlp ]] && echo 256 || echo 32)
    jax_env "$py" "$peer" --data "$KTR_DATA" --model "$model" --batch "$batch" --steps 640 --k 16 \
      --precision "$precision" | grep '^peer=' | tee -a "$KTR_LOGS/jax.txt"
  done
}
jax_highest() { jax_peer highest; }
jax_default() { jax_peer default; }
run_tests() {
  local rc=0
  "$KTR_BIN/ktr_tests" --gtest_filter="$KTR_GPU_TESTS" || rc=$?
  "$KTR_BIN/ktr_tests" --gtest_filter="-$KTR_GPU_TESTS" || rc=$?
  return $rc
}
run_bf16() {
  "$KTR_BIN/ktr" train --data "$KTR_DATA" --model mlp --epochs 1 --batch 256 --precision bf16 &&
    "$KTR_BIN/ktr" train --data "$KTR_DATA" --model cnn --epochs 1 --batch 32 --precision bf16 || exit 1
  jax_peer bf16 "$KTR_DEVICE/jax_bf16_peer.py"
}
run_train() {
  "$KTR_BIN/ktr" train --data "$KTR_DATA" --model mlp --epochs 1 --batch 256 &&
    "$KTR_BIN/ktr" train --data "$KTR_DATA" --model cnn --epochs 1 --batch 32
}
build_from_source() {
  local src=/tmp/ktr-gpu-src jobs
  jobs=$(nproc)
  rm -rf "$src" && mkdir -p "$src" && tar xzf "$KTR_DEVICE/src.tar.gz" -C "$src" || exit 1
  cmake -S "$src/googletest" -B /tmp/gtest-build -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DBUILD_GMOCK=OFF >/dev/null &&
    cmake --build /tmp/gtest-build -j "$jobs" >/dev/null && cmake --install /tmp/gtest-build >/dev/null || exit 1
  local root
  root=$(KTR_NO_APT=1 KTR_TRILINOS_SRC="$src" KTR_HOST_BLAS=none KTR_DEPS_CACHE=/tmp/ktr-deps KTR_JOBS=$jobs \
    scripts/bootstrap.sh cuda | tail -n1) || exit 1
  root=${root#KTR_KOKKOS_ROOT=}
  cmake -S . -B /tmp/ktr-gpu-build -DKokkos_ROOT="$root" -DKokkosKernels_ROOT="$root" \
    -DCMAKE_CXX_COMPILER="$root/bin/nvcc_wrapper" -DGTest_ROOT=/tmp/gtest -DCMAKE_PREFIX_PATH="$src/usr" \
    -Dktr_ENABLE_EXAMPLES=OFF -Dktr_ENABLE_NCCL=OFF -Dktr_STATIC_RUNTIME=ON &&
    cmake --build /tmp/ktr-gpu-build -j "$jobs" --target ktr_cli ktr_tests || exit 1
  mkdir -p /tmp/ktr-gpu-bin && cp /tmp/ktr-gpu-build/apps/ktr /tmp/ktr-gpu-build/tests/ktr_tests /tmp/ktr-gpu-bin/
}

export -f pythons site_dirs run_libs run_info run_capture pipeline pipeline_fp32 pipeline_tf32 jax_peer jax_highest \
  jax_default run_tests run_train run_bf16 build_from_source
export KTR_BIN=$bin KTR_DATA=$data KTR_DEVICE=$dev KTR_PEER=$dev/jax_peer.py KTR_GPU_TESTS=$gpu_tests CUDA_HOME

: >"$logs/stages.txt"
echo "$(date -u +%FT%TZ) deadline ${KTR_GPU_DEADLINE_S:-400} s, dry run: $dry" >"$logs/run.txt"
cat "$dev/MANIFEST" >>"$logs/run.txt" 2>/dev/null || echo "no .device/MANIFEST" >>"$logs/run.txt"
if [[ $dry != 1 && ! -x $bin/ktr && ${KTR_GPU_BUILD_FROM_SOURCE:-0} != 1 ]]; then
  echo "no $bin/ktr" >"$logs/libs.log"
  printf 'libs\tfailed: no %s/ktr (run scripts/gpu-prepare.sh first)\t0\t%s\n' "$bin" "$(limit_of libs)" \
    >>"$logs/stages.txt"
  publish
  echo "gpu-run: $bin/ktr is missing: run scripts/gpu-prepare.sh before the GPU run" >&2
  exit 1
fi
if [[ ${KTR_GPU_BUILD_FROM_SOURCE:-0} == 1 ]]; then
  deadline=$((deadline + 240))  # the build alone takes minutes; the command's own 10-minute limit still applies
  stage build 400 build_from_source || exit 1
  export KTR_BIN=/tmp/ktr-gpu-bin
fi
stage libs "$(limit_of libs)" run_libs || exit 1
# ktr's binaries find cuBLAS through LD_LIBRARY_PATH; the JAX peer runs with the one the run started with.
[[ -n ${LD_LIBRARY_PATH+x} ]] && export KTR_OUTER_LD_LIBRARY_PATH=$LD_LIBRARY_PATH
ld_path=$(cat "$logs/ld_library_path" 2>/dev/null)
[[ -n $ld_path ]] && export LD_LIBRARY_PATH=$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
stage info "$(limit_of info)" run_info || exit 1
for entry in "${stages[@]:2}"; do
  IFS=: read -r name cap fn <<<"$entry"
  stage "$name" "$cap" "$fn"
done
echo "[gpu-run] done in $(($(date +%s) - t0)) s: $out/results.md, $out/logs.tgz" >&2
rm -rf "$logs" ${unpacked:+"$unpacked"}
