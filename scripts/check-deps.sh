#!/usr/bin/env bash
# Checks that a fresh machine can rebuild what this one built: every file path that the dependency builds
# recorded (Kokkos / Kokkos Kernels CMake package files in the bootstrap's prefix) and every library path in ktr's
# own CMake cache belongs to a Debian package that scripts/packages.sh names for that flavour, or to one that a
# named package hard-depends on (an alternative "a | b" does not count: apt may pick the other one), or to one of
# Debian's Essential packages (always installed).
# The one exception is the CUDA toolkit in $CUDA_HOME, which the base machine ships outside Debian's packages.
#   scripts/check-deps.sh FLAVOUR...      (after scripts/build.sh FLAVOUR)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/packages.sh
cuda_home=$(realpath -m "${CUDA_HOME:-/usr/local/cuda}")
status=0

# The packages a set of named packages guarantees: the closure over Depends/Pre-Depends, skipping alternatives
# and virtual packages.
closure() {
  declare -A seen=()
  local queue=("$@") p deps d
  while ((${#queue[@]})); do
    p=${queue[0]}; queue=("${queue[@]:1}")
    [[ -n ${seen[$p]:-} ]] && continue
    seen[$p]=1
    deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null) || continue
    while IFS= read -r d; do
      [[ -z $d || $d == *"|"* ]] && continue
      d=${d%% *}; d=${d%%:*}
      [[ -n ${seen[$d]:-} ]] || queue+=("$d")
    done < <(tr ',' '\n' <<<"$deps" | sed 's/([^)]*)//g; s/^ *//; s/ *$//')
  done
  printf '%s\n' "${!seen[@]}"
}

for flavour in "$@"; do
  named=$(ktr_packages "$flavour")
  allowed=$(closure $named | sort -u)
  build=build/$flavour
  root=$(cat "$build/.kokkos_root" 2>/dev/null) || { echo "check-deps: $build not built (run scripts/build.sh $flavour)" >&2; exit 2; }
  files=()
  [[ $root != /usr ]] && mapfile -t -O 0 files < <(find "$root" -path '*/cmake/*' -name '*.cmake')
  files+=("$build/CMakeCache.txt")
  # Absolute paths outside the dependency prefix, the build tree and the source tree.
  paths=$(grep -ohE '/(usr|opt|lib|lib64)/[A-Za-z0-9_.+/-]+' "${files[@]}" | sort -u |
          while read -r p; do if [[ -f $p ]]; then echo "$p"; fi; done)
  n=0 bad=0
  while read -r p; do
    [[ -z $p ]] && continue
    n=$((n + 1))
    real=$(realpath "$p")
    [[ $real == "$cuda_home"/* ]] && continue
    # usrmerge: /usr/bin/x is shipped as /bin/x
    owner=$(dpkg -S "$p" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null) || owner=
    owner=${owner%%:*}; owner=${owner%%,*}
    if [[ -z $owner ]]; then
      echo "check-deps [$flavour]: $p belongs to no Debian package" >&2; bad=$((bad + 1))
    elif ! grep -qx -- "$owner" <<<"$allowed" &&
         [[ $(dpkg-query -W -f='${Essential}' "$owner" 2>/dev/null) != yes ]]; then
      echo "check-deps [$flavour]: $p comes from '$owner', which scripts/packages.sh neither names nor pulls in" >&2
      bad=$((bad + 1))
    fi
  done <<<"$paths"
  echo "check-deps [$flavour]: $n file paths in the CMake package files and cache, $bad not covered by named packages"
  ((bad == 0)) || status=1
done
exit $status
