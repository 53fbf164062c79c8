#!/usr/bin/env bash
# ktr beside PyTorch on the field surrogates of issue 43 (the U-Net and the periodic net on 32x32 fields), in fp32
# and bf16, on this machine's CPU, interleaved rounds (noise hits all alike): per round ktr with its convolution
# library, ktr with it switched off (KTR_CONV_LIBRARY=off: im2col + gemm), and PyTorch eager (torch_fields_peer.py,
# channels-last, torch.autocast for bf16). Prints every round, then the medians and the same-round ratios' medians.
#   bench/peers/ktr-vs-torch-fields.sh KTR_BINARY TORCH_PYTHON [ROUNDS (default 3)]
# TORCH_PYTHON: a Python with torch and numpy (a large install: bring your own). PEERS_THREADS: threads (2).
# 4,096 training and 512 held-out fields (smoothed noise and one explicit diffusion step of it, periodic), one epoch,
# Adam 1e-3, MSE, batch 32 and 128; bf16 rows only where `ktr info` lists bf16.
set -uo pipefail
KTR=${1:?usage: ktr-vs-torch-fields.sh KTR_BINARY TORCH_PYTHON [ROUNDS]}
PY=${2:?usage: ktr-vs-torch-fields.sh KTR_BINARY TORCH_PYTHON [ROUNDS]}
ROUNDS=${3:-3}
THREADS=${PEERS_THREADS:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
export OMP_NUM_THREADS=$THREADS
"$PY" - "$DATA" <<'PYEOF' || { echo "cannot write the fields with $PY (numpy?)" >&2; exit 1; }
import sys
import numpy as np
rng = np.random.default_rng(0)
def fields(n):
    x = rng.standard_normal((n, 32, 32, 1)).astype(np.float32)
    for _ in range(3):
        x = (x + np.roll(x, 1, 1) + np.roll(x, -1, 1) + np.roll(x, 1, 2) + np.roll(x, -1, 2)) / 5
    lap = np.roll(x, 1, 1) + np.roll(x, -1, 1) + np.roll(x, 1, 2) + np.roll(x, -1, 2) - 4 * x
    return x.astype(np.float32), (x + 0.1 * lap).astype(np.float32)
for name, n in (("", 4096), ("t", 512)):
    x, y = fields(n)
    np.save(f"{sys.argv[1]}/x{name}.npy", x); np.save(f"{sys.argv[1]}/y{name}.npy", y)
PYEOF
declare -A MODEL=(
  [unet]='in=32x32x1 conv3x3:16:relu save:s1 maxpool2 conv3x3:32:relu save:s2 maxpool2 conv3x3:64:relu upsample2 concat:s2 conv3x3:32:relu upsample2 concat:s1 conv3x3:16:relu conv3x3:1'
  [periodic]='in=32x32x1 conv3x3:16:gelu:circular save:a conv3x3:32:gelu:s2:circular conv3x3:32:gelu:circular convT2x2:16 add:a conv3x3:1:circular')
precisions="fp32"
"$KTR" info | grep -qE '^precisions: .*bf16' && precisions="fp32 bf16"
# ktr_run MODEL BATCH PRECISION LIBRARY(on|off): "samples/s test_mse"
ktr_run() {
  KTR_CONV_LIBRARY=$4 "$KTR" train --features "$DATA/x.npy" --targets "$DATA/y.npy" --test-features "$DATA/xt.npy" \
    --test-targets "$DATA/yt.npy" --model "${MODEL[$1]}" --batch "$2" --epochs 1 --optimizer adam --lr 1e-3 \
    --normalize none --precision "$3" --threads "$THREADS" 2>&1 | tr '\r' '\n' |
    sed -n 's/^done: .* \([0-9.]*\) samples\/s, test mse \([0-9.e+-]*\),.*/\1 \2/p' | tail -1
}
torch_run() {
  "$PY" "$HERE/torch_fields_peer.py" --data "$DATA" --model "$1" --batch "$2" --precision "$3" --threads "$THREADS" \
    2>/dev/null | sed -n 's/.*samples_per_s=\([0-9.]*\) test_mse=\([0-9.e+-]*\).*/\1 \2/p'
}
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p') nproc=$(nproc) threads=$THREADS" \
  "torch=$("$PY" -c 'import torch; print(torch.__version__)') ktr convolutions: $("$KTR" info | sed -n 's/^convolutions: *//p')"
rows=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for model in unet periodic; do
    for batch in 32 128; do
      for p in $precisions; do
        read -r lib lib_mse <<<"$(ktr_run "$model" "$batch" "$p" on)"
        read -r t t_mse <<<"$(torch_run "$model" "$batch" "$p")"
        read -r off off_mse <<<"$(ktr_run "$model" "$batch" "$p" off)"
        echo "round=$round model=$model batch=$batch precision=$p ktr=$lib ktr_im2col=$off torch=$t" \
          "ktr/torch=$(awk -v a="${lib:-0}" -v b="${t:-0}" 'BEGIN{printf "%.2f", (b > 0 ? a / b : 0)}')" \
          "ktr/ktr_im2col=$(awk -v a="${lib:-0}" -v b="${off:-0}" 'BEGIN{printf "%.2f", (b > 0 ? a / b : 0)}')" \
          "mse_ktr=$lib_mse mse_ktr_im2col=$off_mse mse_torch=$t_mse" | tee -a "$rows"
      done
    done
  done
done
echo "# medians over $ROUNDS rounds (samples/s; ratios: medians of the same-round ratios)"
for model in unet periodic; do
  for batch in 32 128; do
    for p in $precisions; do
      grep "model=$model batch=$batch precision=$p " "$rows" | awk -v m="$model" -v b="$batch" -v p="$p" '
        function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
          return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1], NR] = kv[2] } n = NR }
        END { for (i = 1; i <= n; i++) { k[i] = v["ktr", i]; o[i] = v["ktr_im2col", i]; t[i] = v["torch", i]
                r[i] = v["ktr/torch", i]; q[i] = v["ktr/ktr_im2col", i] }
          printf "%-8s batch %-3s %s: ktr %.0f, ktr im2col %.0f, torch %.0f; ktr/torch %.2f, ktr/im2col %.2f\n", m, b, p,
            median(k, n), median(o, n), median(t, n), median(r, n), median(q, n) }'
    done
  done
done
rm -f "$rows"
