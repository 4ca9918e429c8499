#!/usr/bin/env python3
"""The issue-15 seed experiments, from tandem's planner (memory) and simulator (time).

    sequence_seed_tables.py [--build build] [--only bert|llama] [--no-sim]

1. Sequence parallelism vs 1D tensor parallelism on 12 GPUs in 4 pipeline stages
   (scenarios/sequence/bert-base-{ring,tp1d}-12gpu.textproto): the largest micro-batch (4
   micro-batches per iteration) and the longest sequence (multiples of 3) that fit, found by
   max_fit.py; then `tandem sim` at the example's batch and at each layout's largest batch.
2. The longest trainable sequence of Llama 3 8B on 8 to 64 H100s under each sp_mode
   (scenarios/sequence/llama3-8b-ulysses-h100.textproto with the layouts of LLAMA_LAYOUTS),
   multiples of 1024 tokens.

Prints markdown tables (docs/sequence.md "Seed experiments" holds a copy) and, with --json, the
raw results. The layouts and every choice are stated in docs/sequence.md beside the tables.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import max_fit  # noqa: E402

BERT = {"ring (sp 3)": "scenarios/sequence/bert-base-ring-12gpu.textproto",
        "1D TP (tp 3)": "scenarios/sequence/bert-base-tp1d-12gpu.textproto"}
LLAMA = "scenarios/sequence/llama3-8b-ulysses-h100.textproto"
GPUS = [8, 16, 32, 64]
# Llama 3 8B has 8 kv heads: Megatron's tp and Ulysses' sp (tp*sp must divide the kv heads) stop at
# 8; the remaining GPUs form ZeRO-3 data-parallel groups. The two rings take every GPU.
# sp_mode ring is multi-head only (docs/sequence.md "Rules"): it runs the model with kv_heads = heads.


def llama_layout(mode, gpus):
    if mode == "megatron":
        tp, sp, extra = min(gpus, 8), 1, []
    elif mode == "ulysses":
        tp, sp, extra = 1, min(gpus, 8), []
    elif mode == "ring_attention":
        tp, sp, extra = 1, gpus, []
    else:  # ring
        tp, sp, extra = 1, gpus, ["model.kv_heads=32", "strategy.flash_attention=false"]
    dp = gpus // (tp * sp)
    return {"tp": tp, "sp": sp, "dp": dp,
            "set": [f"cluster.gpus={gpus}", f"strategy.tp={tp}", f"strategy.sp={sp}", f"strategy.sp_mode={mode}",
                    "strategy.zero_stage=3", "strategy.recompute=full", "strategy.micro_batch=1",
                    f"strategy.global_batch={dp}"] + extra}


def fit(plan, scenario, field, granule, sets=(), times=()):
    ns = argparse.Namespace(plan=plan, scenario=os.path.join(ROOT, scenario), field=field, granule=granule,
                            set=list(sets), times=list(times), max=1 << 40)
    return max_fit.search(ns)


def simulate(sim, scenario, sets):
    cmd = [sim, os.path.join(ROOT, scenario), "--json"]
    for kv in sets:
        cmd += ["--set", kv]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-300:]}
    return json.loads(r.stdout)


def gib(b):
    return f"{b / 2**30:.1f} GiB"


def bert(plan, sim, run_sim):
    rows = {}
    for name, sc in BERT.items():
        mb = fit(plan, sc, "strategy.micro_batch", 1, times=[("strategy.global_batch", 4)])
        seq = fit(plan, sc, "model.seq_len", 3)
        row = {"batch": mb, "seq": seq}
        if run_sim:
            row["sim_example"] = simulate(sim, sc, [])
            row["sim_max"] = simulate(sim, sc, [f"strategy.micro_batch={mb['value']}",
                                               f"strategy.global_batch={4 * mb['value']}"])
        rows[name] = row
    return rows


def llama(plan):
    rows = {}
    for mode in ["megatron", "ulysses", "ring_attention", "ring"]:
        for g in GPUS:
            lay = llama_layout(mode, g)
            rows[f"{mode}/{g}"] = dict(lay, fit=fit(plan, LLAMA, "model.seq_len", 1024, sets=lay["set"]))
    return rows


def tokens_per_s(s):
    if "error" in s:
        return None
    for key in ("tokens_per_second", "tokens_per_s"):
        if key in s:
            return s[key]
    return None


def print_bert(rows):
    print("| layout | largest micro-batch (x4) | peak there | longest sequence (micro-batch 8) | peak there |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['batch']['value']} | {gib(r['batch']['peak_bytes'])} | {r['seq']['value']} | "
              f"{gib(r['seq']['peak_bytes'])} |")
    names = list(rows)
    a, b = rows[names[0]], rows[names[1]]
    print(f"\nratios sp/tp: batch {a['batch']['value'] / b['batch']['value']:.2f}x, "
          f"sequence {a['seq']['value'] / b['seq']['value']:.2f}x")
    if "sim_example" in a:
        for key in ("sim_example", "sim_max"):
            ta, tb = tokens_per_s(a[key]), tokens_per_s(b[key])
            print(f"{key}: sp {ta} tokens/s, tp {tb} tokens/s" + (f", ratio {ta / tb:.2f}x" if ta and tb else "")
                  + ("" if ta and tb else f" (sp: {a[key].get('error', '')} tp: {b[key].get('error', '')})"))


def print_llama(rows):
    print("| sp_mode | " + " | ".join(f"{g} GPUs" for g in GPUS) + " |")
    print("|---|" + "---|" * len(GPUS))
    for mode in ["megatron", "ulysses", "ring_attention", "ring"]:
        cells = []
        for g in GPUS:
            r = rows[f"{mode}/{g}"]
            f = r["fit"]
            lay = f"tp{r['tp']} sp{r['sp']} dp{r['dp']}"
            if f["status"] == "invalid":
                cells.append(f"invalid ({lay})")
            else:
                cells.append(f"{f['value'] // 1024}k ({lay})")
        print(f"| {mode} | " + " | ".join(cells) + " |")
    for key, r in rows.items():
        if r["fit"]["status"] not in ("ok",):
            print(f"{key}: {r['fit']['status']} {r['fit']['reason']}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--only", choices=["bert", "llama"])
    p.add_argument("--no-sim", action="store_true")
    p.add_argument("--json", action="store_true", help="print the raw results too")
    args = p.parse_args()
    plan = os.path.join(args.build, "bin", "tandem-plan")
    sim = os.path.join(args.build, "bin", "tandem-sim")
    out = {}
    if args.only in (None, "bert"):
        out["bert"] = bert(plan, sim, not args.no_sim)
        print_bert(out["bert"])
        print()
    if args.only in (None, "llama"):
        out["llama"] = llama(plan)
        print_llama(out["llama"])
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
