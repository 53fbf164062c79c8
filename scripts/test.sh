#!/usr/bin/env bash
# The README's test command: installs what is missing, builds ktr (OpenMP by default) and runs every test.
#   scripts/test.sh [openmp|serial-debian]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(scripts/build.sh "${1:-openmp}" | tail -n1)
ctest --test-dir "$build" --output-on-failure -j "${KTR_JOBS:-$(nproc)}"
