#!/usr/bin/env bash
# A checkpoint saved by one process and continued by another: both runs' final figures (the last loss and a
# checksum of the held-out predictions, printed with 9 significant digits) must be identical.
#   checkpoint_test.sh HEAT_SURROGATE CONFIG
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in train push; do
  "$1" "$2" "$mode" save "$work/$mode" >"$work/first.txt"
  "$1" "$2" "$mode" resume "$work/$mode" >"$work/second.txt"
  a=$(grep '^final:' "$work/first.txt") b=$(grep '^final:' "$work/second.txt")
  if [[ -z $a || $a != "$b" ]]; then
    echo "$mode: the resumed process differs: '$a' vs '$b'" >&2
    cat "$work/first.txt" "$work/second.txt" >&2
    exit 1
  fi
  echo "$mode: $a (both processes)"
done
