#!/usr/bin/env python3
"""The seed tables of docs/offload.md (issue #16), from tandem's own programs.

  offload_table.py opt13b     OPT-13B, ZeRO-3 on 8 A100s: optimizer / params 0.5 / auto
  offload_table.py largest    the largest GPT (width 8192, layers varied) that `tandem plan`
                              fits on one A100 80GB with 500 GB of host memory, per policy,
                              then `tandem sim` of that size
  offload_table.py limit      OPT-13B as above with the HBM per GPU lowered (cluster.hbm_gib):
                              params at the smallest offload_fraction that fits against auto
  offload_table.py seed       the seed's comparison (dynamic vs DeepSpeed's static policy, OPT-13B,
                              8 A100s, ZeRO-3) at Colossal-AI's OPT tutorial settings: DeepSpeed's
                              ZeRO-3 offload (optimizer; optimizer + parameters) against Gemini auto
                              (gpu_margin_mem_ratio 0, and the tutorial's 0.8)

Run from the repository root after building (build/bin/tandem-plan, build/bin/tandem-sim).
Prints markdown rows; nothing here is fitted or tuned.
"""
import json
import subprocess
import sys

PLAN = "build/bin/tandem-plan"
SIM = "build/bin/tandem-sim"
GIB = 1 << 30


def run(prog, scenario, sets):
    cmd = [prog, scenario, "--json"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    return json.loads(p.stdout), None


def plan_fits(scenario, sets):
    j, err = run(PLAN, scenario, sets)
    return j is not None and j["fits"], j, err


def sim_row(scenario, sets):
    j, err = run(SIM, scenario, sets)
    if j is None:
        return None, err
    return j, None


def opt13b():
    print("| policy | iteration (s) | tokens/s | model TFLOP/s per GPU | peak device (GiB) | host per rank (GiB) | PCIe per iteration per rank (GiB) |")
    print("|---|---|---|---|---|---|---|")
    times = {}
    for policy in ("optimizer", "params", "auto"):
        sc = f"scenarios/offload/opt-13b-{policy}.textproto"
        p, _ = run(PLAN, sc, [])
        s, err = sim_row(sc, [])
        if s is None:
            print(f"| {policy} | {err} |")
            continue
        off = max(r["comm_bytes"]["offload"] for r in p["ranks"]) if p else 0
        times[policy] = s["iteration_time_s"]
        print(f"| {policy} | {s['iteration_time_s']:.3f} | {s['tokens_per_s']:.0f} | {s['model_tflops_per_gpu']:.1f} | "
              f"{s['peak_memory_bytes'] / GIB:.1f} | {p['peak_host_bytes'] / GIB:.1f} | {off / GIB:.2f} |")
    if "params" in times and "auto" in times:
        print(f"\nparams / auto iteration time: {times['params'] / times['auto']:.2f}x")
    if "optimizer" in times and "auto" in times:
        print(f"optimizer / auto iteration time: {times['optimizer'] / times['auto']:.2f}x")


def largest():
    sc = "scenarios/offload/gpt-one-gpu.textproto"
    policies = [("none", ["strategy.offload=none"]), ("optimizer", ["strategy.offload=optimizer"]),
                ("params 1.0", ["strategy.offload=params", "strategy.offload_fraction=1"]),
                ("auto", ["strategy.offload=auto"])]
    print("| policy | largest layers | parameters (B) | what stops one more layer | peak device (GiB) | host (GiB) | iteration (s) | model TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sets in policies:
        lo, hi = 0, 256  # lo fits (0: none yet), hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok, _, _ = plan_fits(sc, sets + [f"model.layers={mid}"])
            lo, hi = (mid, hi) if ok else (lo, mid)
        if lo == 0:
            print(f"| {name} | none fits |")
            continue
        _, j, _ = plan_fits(sc, sets + [f"model.layers={lo}"])
        _, jn, err = plan_fits(sc, sets + [f"model.layers={hi}"])
        why = err if jn is None else f"device peak {jn['peak_memory_bytes'] / GIB:.1f} GiB > HBM"
        s, serr = sim_row(sc, sets + [f"model.layers={lo}"])
        t = f"{s['iteration_time_s']:.2f} | {s['model_tflops_per_gpu']:.1f}" if s else f"sim: {serr} |"
        print(f"| {name} | {lo} | {j['parameters'] / 1e9:.1f} | {why} | {j['peak_memory_bytes'] / GIB:.1f} | "
              f"{j['peak_host_bytes'] / GIB:.1f} | {t} |")


def limit():
    params = "scenarios/offload/opt-13b-params.textproto"
    auto = "scenarios/offload/opt-13b-auto.textproto"
    print("| HBM limit (GiB) | params: smallest fraction that fits | params iteration (s) | params PCIe (GiB) | "
          "auto iteration (s) | auto PCIe (GiB) | params / auto |")
    print("|---|---|---|---|---|---|---|")
    for limit_gib in (13, 14, 15, 16, 16.5, 17, 20, 80):
        hbm = [f"cluster.hbm_gib={limit_gib}"]
        # Smallest fraction that fits, to 1/256 (finer than one of the 41 chunks).
        lo, hi = 0, 256  # hi/256 fits (checked), lo/256 does not (0: no offload, not a params fraction)
        ok, _, _ = plan_fits(params, hbm + ["strategy.offload_fraction=1"])
        if ok:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                fits, _, _ = plan_fits(params, hbm + [f"strategy.offload_fraction={mid / 256}"])
                lo, hi = (lo, mid) if fits else (mid, hi)
            f = hi / 256
            pj, _ = run(PLAN, params, hbm + [f"strategy.offload_fraction={f}"])
            ps, _ = sim_row(params, hbm + [f"strategy.offload_fraction={f}"])
            p_off = max(r["comm_bytes"]["offload"] for r in pj["ranks"]) / GIB
            p_cell = f"{f:.3f} | {ps['iteration_time_s']:.3f} | {p_off:.2f}"
        else:
            ps, p_cell = None, "none fits | - | -"
        aj, aerr = run(PLAN, auto, hbm)
        if aj is None or not aj["fits"]:
            print(f"| {limit_gib} | {p_cell} | does not fit | - | - |")
            continue
        as_, _ = sim_row(auto, hbm)
        a_off = max(r["comm_bytes"]["offload"] for r in aj["ranks"]) / GIB
        ratio = f"{ps['iteration_time_s'] / as_['iteration_time_s']:.3f}" if ps else "-"
        print(f"| {limit_gib} | {p_cell} | {as_['iteration_time_s']:.3f} | {a_off:.2f} | {ratio} |")


# Colossal-AI's OPT tutorial (examples/tutorial/opt/opt at 4f9953be, files of 2022-11): run_clm.sh's
# default 16 sequences per GPU and benchmark.sh's 13b on 8 GPUs; run_clm.py's block_size 1024 (OPT's
# 2048 is over its 1024 cap), gradient checkpointing (full recompute), fp16 (initial_scale 2**14),
# placement "auto"; colossalai_zero.py's gpu_margin_mem_ratio 0.8. One micro-batch per GPU.
SEED_SETS = ["strategy.micro_batch=16", "model.seq_len=1024", "strategy.global_batch=128"]


def seed():
    sc = "scenarios/offload/opt-13b-auto.textproto"
    policies = [
        ("DeepSpeed ZeRO-3, offload_optimizer cpu (ZeRO-Offload)", ["strategy.offload=optimizer"]),
        ("DeepSpeed ZeRO-3, offload_optimizer + offload_param cpu", ["strategy.offload=params", "strategy.offload_fraction=1"]),
        ("Gemini auto, gpu_margin_mem_ratio 0 (GeminiPlugin default)", ["strategy.offload=auto"]),
        ("Gemini auto, gpu_margin_mem_ratio 0.8 (the OPT tutorial)", ["strategy.offload=auto", "strategy.gpu_margin_mem_ratio=0.8"]),
    ]
    print("| policy | iteration (s) | tokens/s | model TFLOP/s per GPU | peak device (GiB) | host per rank (GiB) | PCIe per iteration per rank (GiB) |")
    print("|---|---|---|---|---|---|---|")
    times = []
    for name, sets in policies:
        p, perr = run(PLAN, sc, SEED_SETS + sets)
        s, err = sim_row(sc, SEED_SETS + sets)
        if s is None or p is None:
            print(f"| {name} | {err or perr} |")
            times.append(None)
            continue
        off = max(r["comm_bytes"]["offload"] for r in p["ranks"])
        times.append(s["iteration_time_s"])
        print(f"| {name} | {s['iteration_time_s']:.3f} | {s['tokens_per_s']:.0f} | {s['model_tflops_per_gpu']:.1f} | "
              f"{s['peak_memory_bytes'] / GIB:.1f} | {p['peak_host_bytes'] / GIB:.1f} | {off / GIB:.2f} |")
    ds = [t for t in times[:2] if t is not None]
    gm = [t for t in times[2:] if t is not None]
    if ds and gm:
        print(f"\nDeepSpeed's best / Gemini's best: {min(ds) / min(gm):.3f}x")


if __name__ == "__main__":
    {"opt13b": opt13b, "largest": largest, "limit": limit, "seed": seed}[sys.argv[1] if len(sys.argv) > 1 else "opt13b"]()
