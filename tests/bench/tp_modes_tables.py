#!/usr/bin/env python3
"""Reruns the tables of docs/tp_modes.md: the seed table (scenarios/tp_modes/gpt-6b-grid-seed,
32 rows: 1d/2d/2.5d/3d on 8, 16, 27, 64 GPUs of DGX A100 and DGX H100), the GPT-3 6.7B table
and the GPT-3 175B table, with `tandem sim --json` and `tandem plan --json` (rank 0's plan).
Prints one markdown row a run, in the tables' column order, and the raw figures as JSON lines
to --raw. Each row is the scenario's header's --set lines (kept here as data).

  tests/bench/tp_modes_tables.py --bin build/bin [--only seed|6.7b|175b] [--raw FILE]
"""
import argparse
import json
import subprocess
import sys

SEED = "scenarios/tp_modes/gpt-6b-grid-seed.textproto"
GPT67 = "scenarios/tp_modes/gpt-6.7b-tp-modes-64.textproto"
GPT67_3D = "scenarios/tp_modes/gpt-6.7b-3d-64.textproto"

# gpt-6b-grid-seed.textproto's header: per GPU count, the batch sets, then (layout, sets) per mode.
SEED_ROWS = {
    8: ([], [("1d", "tp 8", ["strategy.tp=8", "strategy.tp_mode=1d"]),
             ("2d", "q 2 (tp 4) x dp 2", ["strategy.tp=4", "strategy.tp_mode=2d"]),
             ("2.5d", "d 2 x q 2 (tp 8)", ["strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2"]),
             ("3d", "q 2 (tp 8)", ["strategy.tp=8", "strategy.tp_mode=3d"])]),
    16: (["cluster.gpus=16", "strategy.micro_batch=8", "strategy.global_batch=64"],
         [("1d", "tp 8 x dp 2", ["strategy.tp=8", "strategy.tp_mode=1d"]),
          ("2d", "q 4 (tp 16)", ["strategy.tp=16", "strategy.tp_mode=2d"]),
          ("2.5d", "d 4 x q 2 (tp 16)", ["strategy.tp=16", "strategy.tp_mode=2.5d", "strategy.tp_depth=4"]),
          ("3d", "q 2 (tp 8) x dp 2", ["strategy.tp=8", "strategy.tp_mode=3d"])]),
    27: (["cluster.gpus=27", "strategy.micro_batch=9", "strategy.global_batch=81"],
         [("1d", "tp 3 x dp 9", ["strategy.tp=3", "strategy.tp_mode=1d"]),
          ("2d", "q 3 (tp 9) x dp 3", ["strategy.tp=9", "strategy.tp_mode=2d"]),
          ("2.5d", "d 3 x q 3 (tp 27)", ["strategy.tp=27", "strategy.tp_mode=2.5d", "strategy.tp_depth=3"]),
          ("3d", "q 3 (tp 27)", ["strategy.tp=27", "strategy.tp_mode=3d"])]),
    64: (["cluster.gpus=64", "strategy.micro_batch=16", "strategy.global_batch=128"],
         [("1d", "tp 8 x dp 8", ["strategy.tp=8", "strategy.tp_mode=1d"]),
          ("2d", "q 4 (tp 16) x dp 4", ["strategy.tp=16", "strategy.tp_mode=2d"]),
          ("2.5d", "d 4 x q 4 (tp 64)", ["strategy.tp=64", "strategy.tp_mode=2.5d", "strategy.tp_depth=4"]),
          ("3d", "q 4 (tp 64)", ["strategy.tp=64", "strategy.tp_mode=3d"])]),
}

# gpt-6.7b-tp-modes-64 and gpt-6.7b-3d-64 headers.
GPT67_ROWS = [
    ("1d", "tp 8 x dp 8", GPT67, ["strategy.tp=8", "strategy.tp_mode=1d"]),
    ("2d", "q 4 (tp 16) x dp 4", GPT67, []),
    ("2.5d", "d 2 x q 4 (tp 32) x dp 2", GPT67, ["strategy.tp=32", "strategy.tp_mode=2.5d", "strategy.tp_depth=2"]),
    ("3d", "q 2 (tp 8) x dp 8", GPT67_3D, ["strategy.tp=8", "strategy.micro_batch=8"]),
    ("3d", "q 4 (tp 64), micro-batch 16", GPT67_3D, []),
]

GPT175_ROWS = [(m, f"scenarios/tp_modes/gpt3-175b-{m}-64.textproto") for m in ("1d", "2d", "2.5d", "3d")]

GIB = 1024.0 ** 3


def run_json(binary, scenario, sets, extra=()):
    cmd = [binary, scenario, "--json", *extra]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def measure(bin_dir, scenario, sets):
    sim = run_json(f"{bin_dir}/tandem-sim", scenario, sets, ["--max-time", "0"])
    plan = run_json(f"{bin_dir}/tandem-plan", scenario, sets)
    r0 = plan["ranks"][0]
    return {
        "iteration_s": sim["iteration_time_s"],
        "mfu": sim["mfu"],
        "breakdown": sim["breakdown"],
        "peak_gib": r0["peak_memory_bytes"] / GIB,
        "activations_gib": r0["memory_breakdown"]["activations"] / GIB,
        "tp_gib": r0["comm_bytes"]["tp"] / GIB,
        "max_peak_gib": plan["peak_memory_bytes"] / GIB,
        "peak_rank": plan["peak_rank"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--only", choices=["seed", "6.7b", "175b"])
    ap.add_argument("--raw", help="append each run's figures as a JSON line")
    ap.add_argument("--preset", choices=["dgx-a100-80g", "dgx-h100"], help="the seed table's rows of one cluster only")
    a = ap.parse_args()
    raw = open(a.raw, "a") if a.raw else None

    def emit(key, m, row):
        print(row, flush=True)
        if raw:
            raw.write(json.dumps({"row": key, **m}) + "\n")
            raw.flush()

    if a.only in (None, "seed"):
        for preset in [a.preset] if a.preset else ("dgx-a100-80g", "dgx-h100"):
            for gpus, (batch, modes) in SEED_ROWS.items():
                for mode, layout, sets in modes:
                    all_sets = (["cluster.preset=dgx-h100"] if preset == "dgx-h100" else []) + batch + sets
                    m = measure(a.bin, SEED, all_sets)
                    b = m["breakdown"]
                    emit(f"seed {preset} {gpus} {mode}", m,
                         f"| {preset} | {gpus} | {mode} | {layout} | {m['iteration_s']:.3f} s | {100 * m['mfu']:.1f} % | "
                         f"{b['exposed_comm_s']:.3f} s (rank {b['rank']}) | {m['peak_gib']:.2f} GiB | "
                         f"{m['activations_gib']:.2f} GiB | {m['tp_gib']:.2f} GiB |")
    if a.only in (None, "6.7b"):
        for mode, layout, scenario, sets in GPT67_ROWS:
            m = measure(a.bin, scenario, sets)
            b = m["breakdown"]
            emit(f"6.7b {mode} {layout}", m,
                 f"| {mode} | {layout} | {m['iteration_s']:.3f} s | {100 * m['mfu']:.1f} % | {b['exposed_comm_s']:.3f} s | "
                 f"{m['peak_gib']:.1f} GiB | {m['activations_gib']:.1f} GiB | {m['tp_gib']:.1f} GiB |")
    if a.only in (None, "175b"):
        for mode, scenario in GPT175_ROWS:
            m = measure(a.bin, scenario, [])
            b = m["breakdown"]
            emit(f"175b {mode}", m,
                 f"| {mode} | {m['iteration_s']:.2f} s | {100 * m['mfu']:.1f} % | {b['compute_s']:.2f} s | "
                 f"{b['exposed_comm_s']:.2f} s | {b['bubble_s']:.2f} s | {m['peak_gib']:.2f} GiB | "
                 f"{m['activations_gib']:.2f} GiB | {m['tp_gib']:.2f} GiB | max peak {m['max_peak_gib']:.2f} GiB "
                 f"(rank {m['peak_rank']}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
