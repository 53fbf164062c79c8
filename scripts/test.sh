#!/usr/bin/env bash
# The README's test command: installs what is missing, builds ktr (OpenMP by default) and runs every test.
#   scripts/test.sh [openmp|openmp-mpi|serial-debian|openmp-asan]   (openmp-mpi: with OpenMPI, mpirun -np 2 tests)
# openmp-asan runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer, less the install test (a
# separate project that does not link the sanitizer runtimes) and less the one-thread copies of the GoogleTest
# cases: the two-thread copies run the same code under the sanitizers, and the serial-debian flavour runs it on one
# thread (about 80 of the stage's 200 test seconds).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
flavour=${1:-openmp}
build=$(scripts/build.sh "$flavour" | tail -n1)
skip=()
if [[ $flavour == openmp-asan ]]; then
  skip=(-E '^install\.|\.threads1$')
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fi
ctest --test-dir "$build" --output-on-failure -j "${KTR_JOBS:-$(nproc)}" "${skip[@]}"
