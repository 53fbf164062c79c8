#!/usr/bin/env bash
# Layering: a file includes only its own layer and those below it. The order, lowest first, is read from
# cmake/layers.txt (one layer a line: its folders, separated by spaces; '#' starts a comment). Every quoted
# "#include" of a ktr file and every <ktr/LAYER/...> include is checked; a header or source that reaches upward
# fails the check, naming the file, the line and both layers. Installed headers must not include an internal one
# (ktr_INTERNAL_HEADERS in cmake/ktrPackage.cmake).
#   scripts/check-layers.sh        (exit 0: clean; 1: violations listed)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
declare -A rank
n=0
while read -r line; do
  line=${line%%#*}
  [[ -z ${line// /} ]] && continue
  for folder in $line; do rank[$folder]=$n; done
  n=$((n + 1))
done <cmake/layers.txt
bad=0
checked=0
for folder in "${!rank[@]}"; do
  [[ -d $folder ]] || continue
  while IFS= read -r -d '' file; do
    dir=$(dirname "$file")
    lineno=0
    while IFS= read -r text; do
      lineno=$((lineno + 1))
      [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"\<]([^\"\>]+)[\"\>] ]] || continue
      target=${BASH_REMATCH[1]}
      case $text in
        *'"'*) path=$(realpath -m --relative-to=. "$dir/$target")  # relative to the including file, or to the
               [[ ! -e $path && -e $target ]] && path=$target ;;    # root (apps and bench: "apps/cli.hpp")
        *) [[ $target == ktr/* ]] || continue; path=${target#ktr/} ;;
      esac
      to=${path%%/*}
      [[ -n ${rank[$to]+x} ]] || continue  # Kokkos, the standard library, a generated header
      if [[ $text == *'"'* && ! -e $path ]]; then
        echo "$file:$lineno: includes $target, which is not there ($path)" >&2
        bad=1
        continue
      fi
      checked=$((checked + 1))
      if ((rank[$to] > rank[$folder])); then
        echo "$file:$lineno: $folder (layer ${rank[$folder]}) includes $path ($to, layer ${rank[$to]}): upward" >&2
        bad=1
      fi
    done <"$file"
  done < <(find "$folder" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.c' \) -print0)
done
# Installed headers never include an internal one (those stay in the build tree: ktr_INTERNAL_HEADERS in
# cmake/ktrPackage.cmake), or a consumer of the installed tree would not compile.
internal=$(sed -n '/^set(ktr_INTERNAL_HEADERS/,/)/p' cmake/ktrPackage.cmake | tr -d '()' | tr ' ' '\n' | grep '\.hpp$')
[[ -n $internal ]] || { echo "check-layers: no ktr_INTERNAL_HEADERS list in cmake/ktrPackage.cmake" >&2; exit 1; }
for folder in "${!rank[@]}"; do
  [[ -d $folder && $folder != apps && $folder != bench ]] || continue
  while IFS= read -r -d '' file; do
    grep -qxF "$(basename "$file")" <<<"$internal" && continue  # internal headers may include each other
    while IFS= read -r h; do
      if grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"[^\"]*\b$h\"" "$file" >&2; then
        echo "$file: an installed header includes the internal $h" >&2
        bad=1
      fi
    done <<<"$internal"
  done < <(find "$folder" -type f -name '*.hpp' -print0)
done
((bad == 0)) || { echo "check-layers: includes that run upward (order: cmake/layers.txt) or reach an internal header" >&2; exit 1; }
echo "check-layers: $checked includes between ktr's layers, none upward ($(tr '\n' ' ' <<<"$(grep -v '^#' cmake/layers.txt | sed '/^ *$/d')"| sed 's/ *$//'))"
