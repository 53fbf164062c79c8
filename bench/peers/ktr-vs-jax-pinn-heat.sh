#!/usr/bin/env bash
# Accuracy beside JAX on the heat problem of examples/c/pinn_heat.c: ktr's example (the C split step, Adam then
# L-BFGS from Adam's weights) and jax_pinn_heat_peer.py (the same points, network, loss and schedule; Adam, then
# optax.lbfgs), each over the same seeds (each draws its own initial weights), 2 threads. Prints each seed's relative
# L2 errors and the medians.
#   bench/peers/ktr-vs-jax-pinn-heat.sh KTR_EXAMPLE JAX_PYTHON [SEEDS (default 1,2,3,4,5)] [ADAM LBFGS (1500 500)]
# KTR_EXAMPLE: build/openmp/examples/ktr_example_c_pinn_heat. JAX_PYTHON: a Python with jax and optax
# (scripts/crosscheck.sh's venv has them).
set -euo pipefail
EXE=$(realpath "${1:?usage: ktr-vs-jax-pinn-heat.sh KTR_EXAMPLE JAX_PYTHON [SEEDS] [ADAM LBFGS]}")
PY=${2:?usage: ktr-vs-jax-pinn-heat.sh KTR_EXAMPLE JAX_PYTHON [SEEDS] [ADAM LBFGS]}
SEEDS=${3:-1,2,3,4,5}; ADAM=${4:-1500}; LBFGS=${5:-500}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXAMPLES=$HERE/../../examples/c
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p') nproc=$(nproc) jax=$("$PY" -c 'import jax; print(jax.__version__)') adam=$ADAM lbfgs=$LBFGS"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
: > "$WORK/ktr" && : > "$WORK/jax"
for s in ${SEEDS//,/ }; do
  sed "s/^  seed: .*/  seed: $s/" "$EXAMPLES/pinn_heat.yaml" > "$WORK/adam.yaml"
  sed "s/^  seed: .*/  seed: $s/" "$EXAMPLES/pinn_heat_lbfgs.yaml" > "$WORK/lbfgs.yaml"
  j=$("$PY" "$HERE/jax_pinn_heat_peer.py" --seeds "$s" --adam "$ADAM" --lbfgs "$LBFGS")
  ja=$(echo "$j" | sed -n 's/.*adam_l2=\([^ ]*\).*/\1/p'); jl=$(echo "$j" | sed -n 's/.*lbfgs_l2=\([^ ]*\).*/\1/p')
  jloss=$(echo "$j" | sed -n 's/.*lbfgs_loss=\([^ ]*\).*/\1/p'); jev=$(echo "$j" | sed -n 's/.*lbfgs_evaluations=\([^ ]*\).*/\1/p')
  # ktr's L-BFGS steps are evaluations: as many as optax.lbfgs's iterations took, line searches included
  out=$(cd "$WORK" && "$EXE" adam.yaml "$ADAM" 1 lbfgs.yaml "$jev")
  read -r ka kl <<< "$(echo "$out" | sed -n 's/.*steps, relative L2 error \([0-9.e+-]*\)$/\1/p' | tr '\n' ' ')"
  kloss=$(echo "$out" | sed -n "s/^heat_lbfgs: step $jev loss //p")
  echo "seed=$s relative L2 after Adam: ktr $ka jax $ja; after L-BFGS: ktr $kl jax $jl; loss after L-BFGS: ktr $kloss jax $jloss ($jev evaluations each)"
  echo "$ka $kl $kloss" >> "$WORK/ktr"; echo "$ja $jl $jloss" >> "$WORK/jax"
done
for col in 1 2 3; do
  name=$(case $col in 1) echo "relative L2 after Adam" ;; 2) echo "relative L2 after L-BFGS" ;; *) echo "loss after L-BFGS" ;; esac)
  k=$(cut -d' ' -f$col "$WORK/ktr" | median); j=$(cut -d' ' -f$col "$WORK/jax" | median)
  echo "median $name: ktr $k, jax $j, ktr/jax $(awk -v a="$k" -v b="$j" 'BEGIN{printf "%.2f", a / b}')"
done
