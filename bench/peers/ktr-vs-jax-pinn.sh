#!/usr/bin/env bash
# ktr's physics-informed step (`ktr bench derivatives`) beside JAX's (jax_pinn_peer.py: nested grad, vmap, jit,
# lax.scan over 16 steps, Adam) on Burgers' residual: same network, points and steps, 2 threads, rounds interleaved.
#   bench/peers/ktr-vs-jax-pinn.sh KTR_BINARY JAX_PYTHON [ROUNDS (default 3)] [WIDTHS (default 20,64,256)]
# JAX_PYTHON: a Python with jax and optax (scripts/crosscheck.sh's venv has them). Prints each round's steps per
# second and ktr / JAX; quote the median ratio.
set -euo pipefail
KTR=${1:?usage: ktr-vs-jax-pinn.sh KTR_BINARY JAX_PYTHON [ROUNDS] [WIDTHS]}
PY=${2:?usage: ktr-vs-jax-pinn.sh KTR_BINARY JAX_PYTHON [ROUNDS] [WIDTHS]}
ROUNDS=${3:-3}; WIDTHS=${4:-20,64,256}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p') nproc=$(nproc) jax=$("$PY" -c 'import jax; print(jax.__version__)')"
for r in $(seq "$ROUNDS"); do
  k=$("$KTR" bench derivatives --threads 2 --rounds 1 --steps 32 --widths "$WIDTHS" \
      | awk '$1 ~ /^[0-9]+$/ {printf "%s=%.1f ", $1, 1e6 / $3}')
  j=$("$PY" "$HERE/jax_pinn_peer.py" --widths "$WIDTHS" --steps 64 | sed -n 's/width=\([0-9]*\) steps_per_s=\([0-9.]*\)/\1=\2/p' | tr '\n' ' ')
  for w in ${WIDTHS//,/ }; do
    ks=$(echo "$k" | tr ' ' '\n' | sed -n "s/^$w=//p"); js=$(echo "$j" | tr ' ' '\n' | sed -n "s/^$w=//p")
    echo "round=$r width=$w ktr_steps_per_s=$ks jax_steps_per_s=$js ktr/jax=$(awk -v a="$ks" -v b="$js" 'BEGIN{printf "%.2f", a / b}')"
  done
done
