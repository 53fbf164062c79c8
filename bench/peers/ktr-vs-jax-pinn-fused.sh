#!/usr/bin/env bash
# Accuracy beside JAX on the fused-path examples: ktr's examples/heat_pinn.cpp or examples/burgers_pinn.cpp (Adam on
# points drawn every step, then L-BFGS from Adam's weights on points drawn once) and jax_pinn_fused_peer.py (the same
# problem, network, initialiser, terms, weights, point counts, Adam schedule; then optax.lbfgs with the same memory),
# over the same seeds (each system draws its own weights and points), 2 threads. ktr's L-BFGS gets as many
# evaluations as Optax's iterations took, line searches included. Prints each seed's relative L2 errors and the
# medians.
#   bench/peers/ktr-vs-jax-pinn-fused.sh heat|burgers KTR_EXAMPLE JAX_PYTHON [SEEDS (1,2,3,4,5)] [ADAM LBFGS]
# KTR_EXAMPLE: build/openmp/examples/ktr_example_heat_pinn or ktr_example_burgers_pinn. ADAM LBFGS: heat 4000 1000,
# burgers 5000 4000 unless given. JAX_PYTHON: a Python with jax and optax (scripts/crosscheck.sh's venv has them).
set -euo pipefail
usage="usage: ktr-vs-jax-pinn-fused.sh heat|burgers KTR_EXAMPLE JAX_PYTHON [SEEDS] [ADAM LBFGS]"
PROBLEM=${1:?$usage}
EXE=$(realpath "${2:?$usage}")
PY=${3:?$usage}
SEEDS=${4:-1,2,3,4,5}
case $PROBLEM in
  heat) ADAM=${5:-4000}; LBFGS=${6:-1000} ;;
  burgers) ADAM=${5:-5000}; LBFGS=${6:-4000} ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
echo "# $(date -u +%FT%TZ) $PROBLEM $(lscpu | sed -n 's/^Model name: *//p') nproc=$(nproc) jax=$("$PY" -c 'import jax; print(jax.__version__)') adam=$ADAM lbfgs=$LBFGS"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
: > "$WORK/ktr" && : > "$WORK/jax"
for s in ${SEEDS//,/ }; do
  j=$("$PY" "$HERE/jax_pinn_fused_peer.py" "$PROBLEM" --seeds "$s" --adam "$ADAM" --lbfgs "$LBFGS")
  ja=$(echo "$j" | field adam_l2); jl=$(echo "$j" | field lbfgs_l2); jloss=$(echo "$j" | field lbfgs_loss)
  jev=$(echo "$j" | field lbfgs_evaluations)
  # Both examples print "after N Adam steps, relative L2 error E", then the L-BFGS loss lines, then the final error.
  if [ "$PROBLEM" = heat ]; then out=$("$EXE" "$ADAM" 1 "$jev" "$s"); else out=$("$EXE" "$ADAM" "$jev" 1 "$s"); fi
  ka=$(echo "$out" | sed -n 's/.*after [0-9]* Adam steps, relative L2 error \([0-9.e+-]*\).*/\1/p')
  kl=$(echo "$out" | sed -n 's/.*relative L2 error \([0-9.e+-]*\) (bound.*/\1/p')
  kloss=$(echo "$out" | sed -n "s/^lbfgs step $jev loss \([0-9.e+-]*\).*/\1/p")
  echo "seed=$s relative L2 after Adam: ktr $ka jax $ja; after L-BFGS: ktr $kl jax $jl; loss after L-BFGS: ktr $kloss jax $jloss ($jev evaluations each)"
  echo "$ka $kl $kloss" >> "$WORK/ktr"; echo "$ja $jl $jloss" >> "$WORK/jax"
done
for col in 1 2 3; do
  name=$(case $col in 1) echo "relative L2 after Adam" ;; 2) echo "relative L2 after L-BFGS" ;; *) echo "loss after L-BFGS" ;; esac)
  k=$(cut -d' ' -f$col "$WORK/ktr" | median); j=$(cut -d' ' -f$col "$WORK/jax" | median)
  echo "median $name: ktr $k, jax $j, ktr/jax $(awk -v a="$k" -v b="$j" 'BEGIN{printf "%.2f", a / b}')"
done
