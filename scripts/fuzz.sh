#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer) and runs each
# for a while on a copy of its seed corpus, printing how many inputs it tried. A crash, leak, sanitizer report or
# timeout fails the script and leaves the reproducer in build/fuzz/.
#   scripts/fuzz.sh [SECONDS per target (default 60)]
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
                   [description]="models/*.cpp core/*.cpp backends/gemm.cpp" [safetensors]=train/safetensors.cpp)
for t in idx npy checkpoint safetensors; do
  clang++ "${flags[@]}" "fuzz/fuzz_$t.cpp" ${sources[$t]} -lz -o "$out/fuzz_$t"
done
# The description fuzzer's ~20 sources, one compiler per core.
rm -rf "$out/description-obj" && mkdir -p "$out/description-obj"
printf '%s\n' fuzz/fuzz_description.cpp ${sources[description]} |
  xargs -P "$(nproc)" -I{} sh -c 'clang++ "$@" -c {} -o "'"$out"'/description-obj/$(echo {} | tr / _).o"' _ \
    "${flags[@]}" "${kokkos[@]}"
clang++ "${flags[@]}" "$out"/description-obj/*.o "${kokkos_libs[@]}" -o "$out/fuzz_description"
status=0
for t in idx npy checkpoint description safetensors; do
  rm -rf "$out/corpus-$t" && cp -r "fuzz/corpus/$t" "$out/corpus-$t"
  log="$out/fuzz_$t.log"
  dict=()
  [[ -f fuzz/$t.dict ]] && dict=(-dict="$PWD/fuzz/$t.dict")  # the description language's tokens
  if (cd "$out" && "./fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "${dict[@]}" "corpus-$t" >"fuzz_$t.log" 2>&1); then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "[fuzz] $t: $runs inputs in ${seconds} s, $cov, no failure"
  else
    echo "[fuzz] $t: FAILED (see $log)"; tail -30 "$log"; status=1
  fi
done
exit $status
