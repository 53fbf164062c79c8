#!/usr/bin/env bash
# End-to-end checks of the `ktr` command line, one case per CTest test:
#   cli_test.sh KTR_BINARY CASE
# Cases: flags, data-errors, resume, corrupt-checkpoint, interrupt. Each works in its own temporary directory
# on a small synthetic dataset written by `ktr synth`.
set -uo pipefail
ktr=$1
case_name=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=${KTR_TEST_THREADS:-1} OMP_PROC_BIND=false

fail() { echo "FAIL [$case_name]: $*" >&2; exit 1; }
# expect CODE PATTERN -- command...: runs the command, checks its exit code and that stderr+stdout match PATTERN.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  [[ $rc -eq $code ]] || fail "'$*' exited $rc, expected $code; output: $out"
  grep -qE -- "$pattern" <<<"$out" || fail "'$*' output does not match /$pattern/: $out"
}
synth() { "$ktr" synth --out "$work/data" --train 640 --test 200 >/dev/null || fail "ktr synth failed"; }
train() { "$ktr" train --data "$work/data" --model "in=28x28x1 flatten dense:32:relu dense:10" --batch 32 "$@"; }

case $case_name in
  flags)
    expect 2 "--lr: 'abc' is not a number" -- "$ktr" train --lr abc
    expect 2 "--bogus: unknown flag" -- "$ktr" train --bogus 1
    expect 2 "--epochs: '0' is not an integer" -- "$ktr" train --epochs 0
    expect 2 "--optimizer: unknown optimiser 'rmsprop'" -- "$ktr" train --optimizer rmsprop
    expect 2 "--schedule: unknown schedule" -- "$ktr" train --schedule linear
    expect 2 "--model: unknown model 'resnet'" -- "$ktr" train --model resnet
    expect 2 "--batch: missing value" -- "$ktr" train --batch
    expect 2 "--checkpoint: required" -- "$ktr" eval
    expect 2 "unknown command 'fly'" -- "$ktr" fly
    expect 0 "usage: ktr train" -- "$ktr" train --help
    expect 0 "OpenMP|Serial|Cuda|HIP" -- "$ktr" info
    ;;
  data-errors)
    expect 1 "--data $work/nowhere: no such directory" -- "$ktr" train --data "$work/nowhere"
    synth
    mkdir -p "$work/bad"
    cp "$work/data/"* "$work/bad/"
    gzip -dc "$work/data/train-images-idx3-ubyte.gz" | head -c 5000 >"$work/bad/train-images-idx3-ubyte"
    rm "$work/bad/train-images-idx3-ubyte.gz"
    expect 1 "train-images-idx3-ubyte: truncated" -- "$ktr" train --data "$work/bad"
    printf 'garbage!' | gzip >"$work/bad/train-images-idx3-ubyte.gz"
    rm "$work/bad/train-images-idx3-ubyte"
    expect 1 "train-images-idx3-ubyte.gz: " -- "$ktr" train --data "$work/bad"
    expect 1 "--model: expects inputs \(1, 8, 8, 1\)" -- "$ktr" train --data "$work/data" --model "in=8x8x1 flatten dense:10"
    ;;
  resume)
    synth
    train --epochs 2 --seed 3 --checkpoint "$work/whole.ckpt" --metrics "$work/m.jsonl" >"$work/log" 2>&1 ||
      fail "training failed: $(cat "$work/log")"
    grep -q "test accuracy" "$work/log" || fail "no final accuracy line"
    grep -q '"type":"summary"' "$work/m.jsonl" || fail "metrics file has no summary"
    [[ $(grep -c '"type":"epoch"' "$work/m.jsonl") -eq 2 ]] || fail "metrics file should have 2 epoch lines"
    [[ ! -e "$work/m.jsonl.tmp" ]] || fail "temporary metrics file left behind"
    train --epochs 1 --seed 3 --steps-per-dispatch 7 --checkpoint "$work/half.ckpt" >/dev/null 2>&1 || fail "half run failed"
    "$ktr" train --data "$work/data" --epochs 2 --resume "$work/half.ckpt" --checkpoint "$work/resumed.ckpt" \
      >"$work/log2" 2>&1 || fail "resume failed: $(cat "$work/log2")"
    grep -q "resumed at step 20" "$work/log2" || fail "resume did not start at step 20: $(cat "$work/log2")"
    # Same seed, same steps: the resumed run ends with exactly the parameters of the uninterrupted one.
    cmp -s "$work/whole.ckpt" "$work/resumed.ckpt" || fail "resumed checkpoint differs from the uninterrupted run"
    expect 0 "accuracy [0-9.]+%" -- "$ktr" eval --checkpoint "$work/whole.ckpt" --data "$work/data"
    expect 2 "--lr: comes from the checkpoint" -- "$ktr" train --data "$work/data" --resume "$work/half.ckpt" --lr 0.1
    ;;
  corrupt-checkpoint)
    synth
    train --epochs 1 --checkpoint "$work/c.ckpt" >/dev/null 2>&1 || fail "training failed"
    size=$(stat -c %s "$work/c.ckpt")
    cp "$work/c.ckpt" "$work/orig.ckpt"
    printf '\xff\xff\xff\xff' | dd of="$work/c.ckpt" bs=1 seek=$((size / 2)) conv=notrunc status=none
    cp "$work/c.ckpt" "$work/corrupt.ckpt"
    expect 1 "c.ckpt: checksum mismatch" -- "$ktr" train --data "$work/data" --epochs 2 --resume "$work/c.ckpt" \
      --checkpoint "$work/c.ckpt"
    cmp -s "$work/c.ckpt" "$work/corrupt.ckpt" || fail "a refused resume overwrote the checkpoint"
    head -c 100 "$work/orig.ckpt" >"$work/short.ckpt"
    expect 1 "short.ckpt: (checksum mismatch|truncated)" -- "$ktr" eval --checkpoint "$work/short.ckpt" --data "$work/data"
    expect 1 "none.ckpt: cannot open" -- "$ktr" eval --checkpoint "$work/none.ckpt" --data "$work/data"
    ;;
  interrupt)
    "$ktr" synth --out "$work/data" --train 20000 --test 100 >/dev/null || fail "synth failed"
    # Started directly (not through a shell function) so the signal reaches ktr, not a subshell.
    "$ktr" train --data "$work/data" --model "in=28x28x1 flatten dense:32:relu dense:10" --batch 32 --epochs 1000 \
      --checkpoint "$work/i.ckpt" --metrics "$work/i.jsonl" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -q "step" "$work/log" 2>/dev/null && break; sleep 0.1; done
    kill -INT $pid
    wait $pid
    rc=$?
    [[ $rc -eq 130 ]] || fail "interrupted run exited $rc, expected 130: $(cat "$work/log")"
    grep -q "interrupted at step [0-9]*, checkpoint saved to" "$work/log" || fail "no interruption message: $(cat "$work/log")"
    grep -q '"type":"interrupted"' "$work/i.jsonl" || fail "metrics file not committed on interrupt"
    step=$(sed -n 's/.*interrupted at step \([0-9]*\).*/\1/p' "$work/log")
    expect 0 "\(step $step\)" -- "$ktr" eval --checkpoint "$work/i.ckpt" --data "$work/data"
    ls "$work" | grep -q '\.tmp' && fail "temporary files left behind: $(ls "$work")"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
