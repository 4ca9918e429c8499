#!/usr/bin/env python3
"""The seed tables of docs/offload.md (issue #16), from tandem's own programs.

  offload_table.py opt13b     OPT-13B, ZeRO-3 on 8 A100s: optimizer / params 0.5 / auto
  offload_table.py largest    the largest GPT (width 8192, layers varied) that `tandem plan`
                              fits on one A100 80GB with 500 GB of host memory, per policy,
                              then `tandem sim` of that size

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


if __name__ == "__main__":
    {"opt13b": opt13b, "largest": largest}[sys.argv[1] if len(sys.argv) > 1 else "opt13b"]()
