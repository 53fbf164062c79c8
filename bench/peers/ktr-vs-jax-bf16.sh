#!/usr/bin/env bash
# ktr's bf16 beside its fp32 and beside JAX + Flax + Optax in Flax's mixed precision (jax_bf16_peer.py), on this
# machine's CPU, interleaved rounds (noise hits all alike); quote the medians of the per-round ratios.
#   bench/peers/ktr-vs-jax-bf16.sh KTR_BINARY [ROUNDS (default 2)]
# PEERS_VENV: a Python venv with jax, flax, optax (default ~/.cache/ktr-peers-venv, created with pip on first use);
# PEERS_DATA: Fashion-MNIST's folder; PEERS_THREADS: threads (2). Whole runs, as `ktr train` reports them
# (MLP batch 256 for 5 epochs, SimpleCNN batch 32 for 3), JAX's scan-16 variant.
# PEERS_TORCH_PYTHON: a Python with PyTorch (none by default: it is a large install): PyTorch eager in fp32 and
# under torch.autocast bf16 (torch_peer.py) join each round.
set -uo pipefail
KTR=${1:?usage: ktr-vs-jax-bf16.sh KTR_BINARY [ROUNDS]}; ROUNDS=${2:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VENV=${PEERS_VENV:-$HOME/.cache/ktr-peers-venv}
DATA=${PEERS_DATA:-/usr/share/datasets/fashion-mnist}
THREADS=${PEERS_THREADS:-2}
TORCH=${PEERS_TORCH_PYTHON:-}
if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c 'import jax, flax, optax' 2>/dev/null; then
  echo "# installing jax flax optax into $VENV" >&2
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q jax flax optax >&2 || { echo "pip install failed" >&2; exit 1; }
fi
export OMP_NUM_THREADS=$THREADS
"$KTR" info | grep -qE '^precisions: .*bf16' || { echo "ktr cannot run bf16 here: $("$KTR" info | grep '^bf16')" >&2; exit 1; }
# ktr_run MODEL BATCH EPOCHS PRECISION: "samples/s accuracy" of a whole run
ktr_run() { "$KTR" train --model "$1" --batch "$2" --epochs "$3" --threads "$THREADS" --precision "$4" --data "$DATA" \
  2>&1 | tr '\r' '\n' | sed -n 's/^done: .* \([0-9.]*\) samples\/s, test accuracy \([0-9.]*\)%.*/\1 \2/p' | tail -1; }
jax_run() { "$VENV/bin/python" "$HERE/jax_bf16_peer.py" --data "$DATA" --model "$1" --batch "$2" --steps "$3" --k 16 \
  2>/dev/null | sed -n 's/.*variant=scan-16 .*samples_per_s=\([0-9]*\).*/\1/p'; }
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p') nproc=$(nproc) threads=$THREADS" \
  "jax=$("$VENV/bin/python" -c 'import jax; print(jax.__version__)') bf16: $("$KTR" info | sed -n 's/^bf16 matmuls: *//p')"
# torch_run MODEL BATCH STEPS: "fp32 bf16" samples/s
torch_run() { [[ -n $TORCH ]] || return 0
  "$TORCH" "$HERE/torch_peer.py" --data "$DATA" --model "$1" --batch "$2" --steps "$3" --threads "$THREADS" 2>/dev/null |
    sed -n 's/.*precision=\([a-z0-9]*\) samples_per_s=\([0-9]*\).*/\2/p' | tr '\n' ' '; }
[[ -z $TORCH ]] || echo "# torch=$("$TORCH" -c 'import torch; print(torch.__version__)')"
for r in $(seq "$ROUNDS"); do
  for cfg in "mlp 256 5 640" "cnn 32 3 1920"; do
    set -- $cfg
    read -r f32 f32acc <<<"$(ktr_run "$1" "$2" "$3" fp32)"
    read -r b16 b16acc <<<"$(ktr_run "$1" "$2" "$3" bf16)"
    j=$(jax_run "$1" "$2" "$4")
    read -r t32 t16 <<<"$(torch_run "$1" "$2" "$4")"
    torch_cols=
    [[ -z $TORCH ]] || torch_cols="torch_fp32=$t32 torch_bf16=$t16 ktr_bf16/torch_bf16=$(awk -v a="${b16:-0}" -v b="${t16:-0}" \
      'BEGIN{if (b > 0) printf "%.2f", a / b; else print "n/a"}')"
    echo "round=$r model=$1 batch=$2 epochs=$3 ktr_fp32=$f32 (${f32acc}%) ktr_bf16=$b16 (${b16acc}%) jax_bf16_scan16=$j" \
      "bf16/fp32=$(awk -v a="${b16:-0}" -v b="${f32:-0}" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "n/a"}')" \
      "ktr_bf16/jax_bf16=$(awk -v a="${b16:-0}" -v b="${j:-0}" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "n/a"}')" \
      $torch_cols
  done
done
