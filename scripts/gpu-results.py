#!/usr/bin/env python3
"""Summarises scripts/gpu-run.sh's logs folder as Markdown, from whatever stages have run so far: each stage's
outcome and time, the GPU, the test outcomes, ktr's pipeline figures in FP32 and TF32, the JAX peer's, the ktr/JAX
ratios at equal precision (ktr fp32 vs JAX 'highest', ktr tf32 vs JAX 'default', ktr bf16 vs the bf16 peer), ktr's
bf16 against its fp32, and the training runs' last lines.
Standard library only.   Usage: gpu-results.py LOGS_DIR"""
import json
import os
import re
import sys

out = sys.argv[1]


def read(name):
    p = os.path.join(out, name)
    return open(p).read() if os.path.exists(p) else ""


def pipeline_json(precision):
    text = read(f"pipeline-{precision}.json")
    return json.loads(text) if text else {}


def pipeline(precision):
    return pipeline_json(precision).get("results", [])


def jax_rows():
    rows = []
    for line in read("jax.txt").splitlines():
        kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if kv.get("peer") in ("jax", "jax-bf16"):
            rows.append(kv)
    return rows


def best(rows, model, key):
    avail = [r for r in rows if r["model"] == model and key(r) is not None]
    return max(avail, key=key) if avail else None


print("# ktr GPU run\n")
run = read("run.txt").strip().splitlines()
print("Run: " + (run[0] if run else "?") + "  ")
for line in run[1:]:
    if line.startswith(("commit", "built", "ktr device code")):
        print(line + "  ")
print("GPU: " + " ".join(read("gpu.txt").split("\n")[1:2]).strip() + "  ")
info = read("info.txt").strip().splitlines()
print("ktr: " + (info[0] if info else "(no info)") + "\n")

print("## Stages\n\n| stage | outcome | seconds | limit |\n|---|---|---:|---:|")
for line in read("stages.txt").splitlines():
    f = line.split("\t")
    if len(f) == 4:
        print(f"| {f[0]} | {f[1]} | {f[2]} | {f[3]} |")
print()


def gtest_summary(name):
    text = read(name)
    if not text:
        return ["not run"]
    out = [l.strip() for l in re.findall(r"^\[ +(?:PASSED|FAILED|SKIPPED) +\].*tests?.*$", text, re.M)]
    out += ["FAILED: " + n for n in re.findall(r"^\[ +FAILED +\] (\S+\.\S+)(?: \(|$)", text, re.M)]
    return out or ["no summary (see logs.tgz, %s)" % name]


print("## Tests\n")
caps = re.findall(r"^\[ +(OK|FAILED|SKIPPED) +\] (Capture\.\w+)", read("capture.log"), re.M)
for status, name in caps:
    print(f"- {name}: {status}")
print("- capture stage: " + "; ".join(gtest_summary("capture.log")))
print("- the rest of ktr_tests: " + "; ".join(gtest_summary("tests.log")))
print()

train = [l for l in read("train.log").splitlines() if l.startswith(("epoch", "done", "model", "device"))
         and "step " not in l]
if train:
    print("## Training through the CLI\n\n```\n" + "\n".join(train) + "\n```\n")

jax = jax_rows()
pair = {"fp32": "highest", "tf32": "default"}
checks = []
for precision in ("fp32", "tf32"):
    rows = pipeline(precision)
    print(f"## ktr bench pipeline, {precision}\n")
    if not rows:
        print("(no results yet: see logs.tgz, pipeline-%s.log)\n" % precision)
        continue
    whole = pipeline_json(precision)
    if not whole.get("complete", True):
        print("(incomplete: the stage ended before the benchmark did; medians of the rounds timed so far)\n")
    print("| model | variant | batch | samples/s | vs naive | ran (gemm calls fp32/tf32) | rounds | note |\n"
          "|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['variant']} | {r['batch']} | "
              f"{r['samples_per_s'] if r['available'] else '-'} | "
              f"{r['speedup_vs_naive'] if r['available'] else '-'} | "
              f"{r.get('precision', '?')} ({r.get('gemm_calls_fp32', '?')}/{r.get('gemm_calls_tf32', '?')}) | "
              f"{r.get('rounds', '?')} | {r.get('note', '')} |")
    print()
    wrong = [r["model"] + " " + r["variant"] for r in rows if r["available"] and r.get("precision") != precision]
    checks.append((f"every {precision} variant ran {precision}", not wrong,
                   "ran another precision: " + ", ".join(wrong) if wrong else "all of them"))
    for model in ("mlp", "cnn"):
        k = best(rows, model, lambda r: r["samples_per_s"] if r["available"] else None)
        j = best([r for r in jax if r.get("precision") == pair[precision]], model,
                 lambda r: float(r["samples_per_s"]))
        if k and j:
            ratio = k["samples_per_s"] / float(j["samples_per_s"])
            line = (f"ktr {precision} {model}: best {k['variant']} {k['samples_per_s']:.0f} samples/s vs JAX "
                    f"--precision {pair[precision]} best {j['variant']} {float(j['samples_per_s']):.0f}: "
                    f"ratio {ratio:.2f}")
            checks.append((f"ktr >= 2x best JAX ({model}, {precision})", ratio >= 2, line))
        elif k:
            checks.append((f"ktr >= 2x best JAX ({model}, {precision})", None, "JAX peer did not run"))
    if precision == "fp32":
        g = [r for r in rows if r["model"] == "mlp" and r["variant"] == "graph-16" and r["batch"] == 256]
        if g and g[0]["available"]:
            checks.append(("graph-16 >= 2x naive (MLP, batch 256, fp32)", g[0]["speedup_vs_naive"] >= 2,
                           f"graph-16 is {g[0]['speedup_vs_naive']:.2f}x naive"))
        else:
            checks.append(("graph-16 >= 2x naive (MLP, batch 256, fp32)", False,
                           "graph-16 not measured: " + (g[0].get("note", "") if g else "no row")))

# bf16: ktr train --precision bf16 (bf16.log) beside the train stage's fp32 runs and the bf16 JAX peer.
def done_rates(name):
    return [float(m) for m in re.findall(r"^done: .* ([0-9.]+) samples/s", read(name), re.M)]


bf16_lines = [l for l in read("bf16.log").splitlines() if l.startswith(("done", "dispatch"))]
if bf16_lines:
    print("## bf16 (ktr train --precision bf16)\n\n```\n" + "\n".join(bf16_lines) + "\n```\n")
f32_rates, b16_rates = done_rates("train.log"), done_rates("bf16.log")
for i, model in enumerate(("mlp", "cnn")):
    if i < len(b16_rates) and i < len(f32_rates):
        checks.append((f"ktr bf16 vs ktr fp32 ({model}, ktr train, 1 epoch)", None if b16_rates[i] else False,
                       f"{b16_rates[i]:.0f} vs {f32_rates[i]:.0f} samples/s: {b16_rates[i] / f32_rates[i]:.2f}x"))
    j = best([r for r in jax if r.get("precision") == "bf16"], model, lambda r: float(r["samples_per_s"]))
    if i < len(b16_rates) and j:
        checks.append((f"ktr bf16 vs JAX bf16 ({model})", None,
                       f"ktr train {b16_rates[i]:.0f} samples/s (whole epoch) vs JAX bf16 best {j['variant']} "
                       f"{float(j['samples_per_s']):.0f}: ratio {b16_rates[i] / float(j['samples_per_s']):.2f}"))

print("## JAX peer\n")
if jax:
    print("| model | variant | batch | precision | samples/s |\n|---|---|---|---|---|")
    for r in jax:
        print(f"| {r['model']} | {r['variant']} | {r['batch']} | {r['precision']} | {r['samples_per_s']} |")
else:
    logs = [l for l in (read("jax-highest.log") + read("jax-default.log")).strip().splitlines() if l.strip()]
    print("not run: " + (logs[-1] if logs else "the JAX stages have not run"))
print("\n## Acceptance\n")
for name, ok, detail in checks:
    print(f"- {'PASS' if ok else ('measured' if ok is None else 'FAIL')}: {name}: {detail}")
if not checks:
    print("- none yet: the pipeline stages have not run")
