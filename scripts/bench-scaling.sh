#!/usr/bin/env bash
# Data-parallel scaling on this machine: samples/s of `ktr train` on 1 and on 2 MPI ranks (1 thread each), and
# the share of the run spent in the gradient allreduce, for the MLP and SimpleCNN on Fashion-MNIST. The 2-rank
# runs use --time-allreduce: a barrier before each allreduce separates the transfer from the wait for the slower
# rank (both are reported; the barrier costs a little of the samples/s).
#   scripts/bench-scaling.sh [BUILD_DIR (default build/openmp-mpi, from scripts/build.sh openmp-mpi)] [EPOCHS]
# Each line: model, ranks, samples/s of the whole run (as `ktr train` prints it), allreduce calls/time/share.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build/openmp-mpi}
epochs=${2:-1}
ktr=$build/apps/ktr
[[ -x $ktr ]] || { echo "bench-scaling: $ktr not built (scripts/build.sh openmp-mpi)" >&2; exit 2; }
mpirun=(mpirun --oversubscribe --mca btl self,vader --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
export OMP_PROC_BIND=false
printf '%-4s %5s %12s  %s\n' model ranks samples/s allreduce
for model in mlp cnn; do
  for np in 1 2; do
    timing=()
    ((np > 1)) && timing=(--time-allreduce)
    out=$("${mpirun[@]}" -np "$np" "$ktr" train --model "$model" --epochs "$epochs" --threads 1 --no-eval \
      "${timing[@]}" 2>&1) ||
      { echo "$out" >&2; exit 1; }
    rate=$(sed -n 's/^done: .* \([0-9]*\) samples\/s.*/\1/p' <<<"$out")
    share=$(sed -n 's/^allreduce: //p' <<<"$out")
    printf '%-4s %5s %12s  %s\n' "$model" "$np" "$rate" "${share:--}"
  done
done
