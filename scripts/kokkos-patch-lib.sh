# Sourced by scripts/patch-kokkos-{cuda,hip}.sh: the one way they edit a *copy* of the Kokkos 3.4.01 sources.
# Every edit leaves a `ktr-patch(<id>)` comment behind: a fix whose marker is already there is skipped (re-running
# is harmless), and a fix whose expected source pattern is missing stops the script with an error.
# The caller sets `src` (the Kokkos source folder) and `patch_tag` (the log prefix).
# shellcheck shell=bash disable=SC2154  # src and patch_tag are set by the caller

log() { echo "[$patch_tag] $*" >&2; }
die() { echo "[$patch_tag] ERROR: $*" >&2; exit 1; }

check_kokkos_34() {
  [[ -f $src/core/src/Kokkos_Core.hpp && -x $src/bin/nvcc_wrapper ]] || die "$src is not a Kokkos source tree"
  if ! grep -q 'Kokkos_VERSION_MAJOR 3)' "$src/CMakeLists.txt" || ! grep -q 'Kokkos_VERSION_MINOR 4)' "$src/CMakeLists.txt"; then
    die "$src is not Kokkos 3.4: these patches were written for 3.4.01"
  fi
}

# patch_src <id> <file> <perl substitution(s), run with -0 (whole file)>
# The substitution must put the marker `ktr-patch(<id>)` into the file.
patch_src() {
  local id=$1 file=$src/$2 expr=$3
  [[ -f $file ]] || die "$id: $file not found"
  if grep -qF "ktr-patch($id)" "$file"; then log "$id: already applied"; return; fi
  perl -0pi -e "$expr" "$file" || die "$id: perl failed on $2"
  grep -qF "ktr-patch($id)" "$file" || die "$id: expected pattern not found in $2 (unexpected Kokkos source?)"
  log "$id: applied to $2"
}

# add_gpu_arch <id> <OPTION> <description> <after-option> <check-function> <flag> [<family>]
# Teaches Kokkos 3.4's CMake a GPU architecture it predates, the way its own entries are written: a
# Kokkos_ARCH_<OPTION> option after <after-option>'s, a <check-function>(<OPTION> <flag>) line after
# <after-option>'s (which passes -arch=<flag> or --amdgpu-target=<flag> to every compile), and KOKKOS_ARCH_<OPTION>
# (plus KOKKOS_ARCH_<family>, when given) in KokkosCore_config.h, so code can ask which one it was built for.
add_gpu_arch() {
  local id=$1 opt=$2 desc=$3 after=$4 check=$5 flag=$6 family=${7:-}
  patch_src "$id" cmake/kokkos_arch.cmake "
    s{^(KOKKOS_ARCH_OPTION\\($after\\s.*\\n)}{\$1# ktr-patch($id): an architecture Kokkos 3.4.01 predates\\nKOKKOS_ARCH_OPTION($opt GPU \"$desc\")\\n}m or die;
    s{^($check\\($after\\s.*\\n)}{\$1$check($opt $flag) # ktr-patch($id)\\n}m or die;"
  local defs="#cmakedefine KOKKOS_ARCH_$opt"
  [[ -n $family ]] && defs+="\\n#cmakedefine KOKKOS_ARCH_$family"
  patch_src "$id" cmake/KokkosCore_config.h.in \
    "s{^(#cmakedefine KOKKOS_ARCH_AMPERE86\\n)}{\$1// ktr-patch($id)\\n$defs\\n}m"
  if [[ -n $family ]]; then
    patch_src "$id-family" cmake/kokkos_arch.cmake \
      "s{^(\\s*IF \\(KOKKOS_ARCH_AMPERE80 OR KOKKOS_ARCH_AMPERE86\\)\\n\\s*SET\\(KOKKOS_ARCH_AMPERE ON\\)\\n\\s*ENDIF\\(\\)\\n)}{\$1  IF (KOKKOS_ARCH_$opt) # ktr-patch($id-family)\\n    SET(KOKKOS_ARCH_$family ON)\\n  ENDIF()\\n}m"
  fi
}
