#!/usr/bin/env bash
# The README's train command: installs what is missing, builds ktr (OpenMP) and runs `ktr train` with the
# given flags (default: the MLP on Fashion-MNIST from /usr/share/datasets/fashion-mnist).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(scripts/build.sh openmp | tail -n1)
export OMP_PROC_BIND=${OMP_PROC_BIND:-false}
exec "$build/apps/ktr" train "$@"
