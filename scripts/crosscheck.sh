#!/usr/bin/env bash
# ktr against Flax and Optax (tests/flax/crosscheck.py): installs pinned jax, flax, optax and safetensors into a
# venv kept in the dependency cache (on a fresh machine that install is part of the cold run), builds the OpenMP
# flavour and runs the cross-check. Exits non-zero when a layout, the flatten order, the loss or an optimiser
# step drifts.
#   scripts/crosscheck.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pins=(jax==0.10.2 jaxlib==0.10.2 flax==0.12.8 optax==0.2.8 safetensors==0.8.0 numpy==2.4.6)
source scripts/venv.sh
venv=$(cached_venv flax "" "${pins[@]}")
build=$(scripts/build.sh openmp | tail -n1)
cmake --build "$build" --target ktr_crosscheck ktr_rl_crosscheck ktr_cli -j "${KTR_JOBS:-$(nproc)}" >&2
# The checks run as separate processes, one per core (each JAX process keeps about one busy).
OMP_PROC_BIND=false "$venv/bin/python" tests/flax/crosscheck.py --ktr "$build/apps/ktr" --tool "$build/tests/ktr_crosscheck" \
  --rl-tool "$build/tests/ktr_rl_crosscheck" --jobs "${KTR_JOBS:-$(nproc)}"
