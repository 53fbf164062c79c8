#!/usr/bin/env bash
# Installs BUILD_DIR into a temporary prefix, then builds ktr's C and Fortran examples as a simulation code would:
# a CMake project that enables only C and Fortran (find_package(ktr), ktr::c, ktr::fortran), and a plain
# `cc app.c $(pkg-config --cflags --libs ktr)`; and TorchFort's interface (examples/torchfort) through pkg-config.
# Runs each; the surrogates must beat predicting the mean 5x, the RL control no control 10x.
#   run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$(dirname "${BASH_SOURCE[0]}")" -B "$work/build" -DKTR_SOURCE_DIR="$src" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc -std=c99 -o "$work/heat_pc" "$src/examples/c/heat_surrogate.c" $(pkg-config --cflags --libs ktr) -lm
# shellcheck disable=SC2046
gfortran -o "$work/heat_pcf" "$src/examples/fortran/heat_surrogate.f90" $(pkg-config --cflags --libs ktr-fortran)
# TorchFort's programs against the installed <torchfort.h> and `use torchfort`, through pkg-config alone
# shellcheck disable=SC2046
cc -std=c99 -o "$work/tf_pc" "$src/examples/torchfort/simulation.c" $(pkg-config --cflags --libs ktr-torchfort) -lm
# shellcheck disable=SC2046
gfortran -o "$work/tf_pcf" "$src/examples/torchfort/simulation.f90" $(pkg-config --cflags --libs ktr-torchfort)
# shellcheck disable=SC2046
gfortran -o "$work/tf_rl_pcf" "$src/examples/torchfort/control.f90" $(pkg-config --cflags --libs ktr-torchfort)
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
"$work/build/heat_c" "$src/examples/c/heat.yaml" push | tail -n 2
"$work/build/heat_f" "$src/examples/fortran/heat.yaml" train | tail -n 2
"$work/heat_pc" "$src/examples/c/heat.yaml" train | tail -n 1
"$work/heat_pcf" "$src/examples/fortran/heat.yaml" push | tail -n 1
"$work/build/tf_c" "$src/examples/torchfort/config.yaml" "$work/tf_c_ckpt" 2>/dev/null | tail -n 1
"$work/build/tf_f" "$src/examples/torchfort/config.yaml" "$work/tf_f_ckpt" | tail -n 1
"$work/tf_pc" "$src/examples/torchfort/config.yaml" "$work/tf_pc_ckpt" 2>/dev/null | tail -n 1
"$work/tf_pcf" "$src/examples/torchfort/config.yaml" "$work/tf_pcf_ckpt" | tail -n 1
# TorchFort's reinforcement-learning calls: sixteen environments per call, the learnt control 10x better than none
# (networks 32 wide: one thread is faster than two)
OMP_NUM_THREADS=1 "$work/build/tf_rl_f" "$src/examples/torchfort/control.yaml" "$work/tf_rl_f_ckpt" | tail -n 1
OMP_NUM_THREADS=1 "$work/tf_rl_pcf" "$src/examples/torchfort/control.yaml" "$work/tf_rl_pcf_ckpt" | tail -n 1
echo "C and Fortran consumers: find_package(ktr) and pkg-config both work"
