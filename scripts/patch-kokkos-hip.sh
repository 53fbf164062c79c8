#!/usr/bin/env bash
# Patches a *copy* of the Kokkos 3.4.01 sources so that its HIP backend can target the MI200 series:
#
#   scripts/patch-kokkos-hip.sh <kokkos-src-dir>
#
# Kokkos 3.4.01 knows AMD GPUs up to gfx908 (MI100, Kokkos_ARCH_VEGA908). Kokkos 4.x names the MI200 series
# Kokkos_ARCH_VEGA90A (--offload-arch=gfx90a, macro KOKKOS_ARCH_VEGA90A); this adds the same option, so one
# -DKokkos_ARCH_VEGA90A=ON works with both. gfx90a is wave64 like gfx908, so nothing else in the backend changes.
# Called by scripts/bootstrap.sh on the copy in its temporary build folder; the edits follow
# scripts/kokkos-patch-lib.sh's rules.
set -euo pipefail

if (( $# != 1 )); then echo "usage: $0 <kokkos-src-dir>" >&2; exit 2; fi
src=$1
patch_tag=patch-kokkos-hip
# shellcheck source=scripts/kokkos-patch-lib.sh disable=SC2034  # src, patch_tag: read by the library
source "$(dirname "${BASH_SOURCE[0]}")/kokkos-patch-lib.sh"
check_kokkos_34
add_gpu_arch vega90a-arch VEGA90A "AMD GPU MI200 series GFX90A" VEGA908 CHECK_AMDGPU_ARCH gfx90a
log "done"
