#!/usr/bin/env bash
# Checks that binaries can travel to a bare GPU machine (scripts/gpu-prepare.sh carries them; CI checks build/cuda's
# on every change): each carries sm_90 code, needs no shared library but the allowed ones below, and no glibc
# symbol newer than 2.35 (Ubuntu 22.04). Prints one line per binary; exit 1 naming what is wrong.
#   scripts/check-travel.sh BINARY...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# cuBLAS (found there: the toolkit or the Python wheels) and glibc's own libraries; nothing else.
allowed="libcublas.so.13 libcublasLt.so.13 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1
ld-linux-x86-64.so.2"
max_glibc=2.35
status=0
for f in "$@"; do
  [[ -f $f ]] || { echo "check-travel: $f: no such file" >&2; status=1; continue; }
  # The listings go to variables first: a reader that stops early (grep -q) would break the writer's pipe.
  archs=$("$here/fatbin-archs.py" "$f" 2>&1) || archs=""
  if ! grep -q '^sm_90 cubin' <<<"$archs"; then
    echo "check-travel: $f carries no sm_90 code (${archs:-no .nv_fatbin section})" >&2
    status=1
  fi
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p')
  bad=$(comm -23 <(sort -u <<<"$needed") <(tr ' ' '\n' <<<"$allowed" | sort -u) | grep . | tr '\n' ' ' || true)
  if [[ -n $bad ]]; then
    echo "check-travel: $f needs ${bad}(allowed: $(tr '\n' ' ' <<<"$allowed"))" >&2
    status=1
  fi
  symbols=$(objdump -T "$f")
  glibc=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$symbols" | sed 's/GLIBC_//' | sort -Vu | tail -n1 || true)
  if [[ -n $glibc && $(printf '%s\n' "$glibc" "$max_glibc" | sort -V | tail -n1) != "$max_glibc" ]]; then
    newer=$(grep -E "GLIBC_$glibc[^0-9.]" <<<"$symbols" | awk '{print $NF}' | sort -u | head -n5 | tr '\n' ' ')
    echo "check-travel: $f needs glibc $glibc (over $max_glibc: $newer)" >&2
    status=1
  fi
  echo "check-travel: $f: $(tr '\n' ' ' <<<"$needed")| glibc ${glibc:-none} | $(grep '^sm_90 cubin' <<<"$archs" || echo 'no sm_90 cubin')"
done
exit $status
