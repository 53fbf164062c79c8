#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer) and runs each
# for a while on a copy of its seed corpus, printing how many inputs it tried. A crash, leak, sanitizer report or
# timeout fails the script and leaves the reproducer in build/fuzz/.
#   scripts/fuzz.sh [SECONDS per target (default 60)]   (targets run KTR_JOBS at a time, default one per core)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
source scripts/packages.sh
ktr_install_packages fuzz
out=build/fuzz
mkdir -p "$out"
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
# The description parser builds each token's layer through the registry, so its fuzzer compiles the layers (and
# what they call) against Debian's binary Serial Kokkos + Kokkos Kernels; parsing touches no device and no BLAS.
mkdir -p "$out/include/ktr"
sed 's/@PROJECT_VERSION@/fuzz/' cmake/ktr_config.hpp.in >"$out/include/ktr/ktr_config.hpp"
kokkos=(-I/usr/include/trilinos -I"$out/include")
kokkos_libs=(-ltrilinos_kokkoscore -ltrilinos_kokkoskernels -lopenblas)
declare -A sources=([idx]=data/idx.cpp [npy]=data/npy.cpp [checkpoint]=train/checkpoint.cpp
                   [description]="models/*.cpp core/*.cpp backends/conv.cpp backends/gemm.cpp backends/gemm_kokkos.cpp backends/host_blas.cpp backends/precision.cpp" [safetensors]=train/safetensors.cpp)
# Every compile runs at once, one compiler per core: the four single-reader targets (each compiled and linked in
# one command) and the description fuzzer's ~20 objects.
rm -rf "$out/description-obj" && mkdir -p "$out/description-obj"
compile() {  # compile KIND ARG: a reader's whole target, or one object of the description fuzzer
  if [[ $1 == target ]]; then
    clang++ "${flags[@]}" "fuzz/fuzz_$2.cpp" ${sources[$2]} -lz -o "$out/fuzz_$2"
  else
    clang++ "${flags[@]}" "${kokkos[@]}" -c "$2" -o "$out/description-obj/${2//\//_}.o"
  fi
}
for unit in $(printf 'target:%s\n' idx npy checkpoint safetensors) \
            $(printf 'object:%s\n' fuzz/fuzz_description.cpp ${sources[description]}); do
  while (($(jobs -rp | wc -l) >= ${KTR_JOBS:-$(nproc)})); do wait -n || exit 1; done
  compile "${unit%%:*}" "${unit#*:}" &
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || exit 1; done
clang++ "${flags[@]}" "$out"/description-obj/*.o "${kokkos_libs[@]}" -o "$out/fuzz_description"
# libFuzzer runs one thread: the five fuzzers run one per core, each for its full time.
run() {  # run TARGET: fuzz it for $seconds on a copy of its corpus; the log says how it ended
  local t=$1 dict=() rc=0
  rm -rf "$out/corpus-$t" && cp -r "fuzz/corpus/$t" "$out/corpus-$t"
  [[ -f fuzz/$t.dict ]] && dict=(-dict="$PWD/fuzz/$t.dict")  # the description language's tokens
  (cd "$out" && "./fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
     -print_final_stats=1 "${dict[@]}" "corpus-$t" >"fuzz_$t.log" 2>&1) || rc=$?
  echo "$rc" >"$out/fuzz_$t.status"
}
targets=(idx npy checkpoint description safetensors)
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= ${KTR_JOBS:-$(nproc)})); do wait -n || true; done
  run "$t" &
done
wait
status=0
for t in "${targets[@]}"; do
  log="$out/fuzz_$t.log"
  if [[ $(cat "$out/fuzz_$t.status") == 0 ]]; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "[fuzz] $t: $runs inputs in ${seconds} s, $cov, no failure"
  else
    echo "[fuzz] $t: FAILED (see $log)"; tail -30 "$log"; status=1
  fi
done
exit $status
