#!/usr/bin/env bash
# Sharing cores: samples/s of `ktr train` alone and with a second identical `ktr train` beside it on the same cores
# (MPI ranks oversubscribed, CI's parallel tests, a simulation's other processes), for each way idle OpenMP threads
# may wait between kernels:
#   ktr        ktr's default (GOMP_SPINCOUNT=1000, set by ktr when the user set nothing)
#   libgomp    libgomp's own default (GOMP_SPINCOUNT=300000: threads spin for milliseconds before sleeping)
#   passive    OMP_WAIT_POLICY=passive (threads sleep at once)
# and any GOMP_SPINCOUNT values given in KTR_SPINCOUNTS (e.g. "1000 30000"). Rounds are interleaved (every policy
# alone, then side by side, round after round); medians per line, and the same run's ratios: side-by-side / alone
# (1/2 is a fair share of 2 cores) and alone / ktr's alone.
#   scripts/bench-sharing.sh [BUILD_DIR (default build/openmp)] [ROUNDS (default 3)]
# Data: `ktr synth` images, 16000 samples (MLP batch 256, SimpleCNN batch 32), KTR_EPOCHS epochs (default 6: a
# couple of seconds per run, well above process start-up), no evaluation.
# Never run it beside a build or another benchmark.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build/openmp}
rounds=${2:-3}
ktr=$build/apps/ktr
[[ -x $ktr ]] || { echo "bench-sharing: $ktr not built (scripts/build.sh openmp)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
epochs=${KTR_EPOCHS:-6}
"$ktr" synth --out "$work/data" --train 16000 --test 10 >/dev/null
unset OMP_WAIT_POLICY GOMP_SPINCOUNT
export OMP_PROC_BIND=false
policies=(ktr libgomp passive)
for n in ${KTR_SPINCOUNTS:-}; do policies+=("spin$n"); done
env_of() {
  case $1 in
    ktr) echo "" ;;
    libgomp) echo "GOMP_SPINCOUNT=300000" ;;
    passive) echo "OMP_WAIT_POLICY=passive" ;;
    spin*) echo "GOMP_SPINCOUNT=${1#spin}" ;;
  esac
}
# run MODEL POLICY OUTFILE: one training run, its samples/s into OUTFILE
run() {
  local batch=256
  [[ $1 == cnn ]] && batch=32
  # shellcheck disable=SC2046
  env $(env_of "$2") "$ktr" train --data "$work/data" --model "$1" --batch "$batch" --epochs "$epochs" --no-eval 2>&1 |
    sed -n 's/^done: .* \([0-9]*\) samples\/s.*/\1/p' >"$3"
}
declare -A alone side
for ((r = 0; r < rounds; ++r)); do
  for model in mlp cnn; do
    for p in "${policies[@]}"; do
      run "$model" "$p" "$work/a"
      alone[$model.$p]+="$(cat "$work/a") "
      run "$model" "$p" "$work/s1" &
      run "$model" "$p" "$work/s2" &
      wait
      side[$model.$p]+="$(cat "$work/s1") $(cat "$work/s2") "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "ktr train, $epochs epochs of 16000 samples, $(nproc) cores, $rounds interleaved rounds; medians of samples/s per process"
printf '%-5s %-9s %-24s %10s %14s %10s %12s\n' model policy setting alone side-by-side side/alone alone/ktr
for model in mlp cnn; do
  base=$(median <<<"${alone[$model.ktr]}")
  for p in "${policies[@]}"; do
    a=$(median <<<"${alone[$model.$p]}")
    s=$(median <<<"${side[$model.$p]}")
    setting=$(env_of "$p")
    printf '%-5s %-9s %-24s %10s %14s %10s %12s\n' "$model" "$p" "${setting:-(ktr sets GOMP_SPINCOUNT)}" "$a" "$s" \
      "$(awk -v a="$a" -v s="$s" 'BEGIN{printf "%.2f", s / a}')" "$(awk -v a="$a" -v b="$base" 'BEGIN{printf "%.2f", a / b}')"
  done
done
