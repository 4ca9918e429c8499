#!/usr/bin/env python3
"""Checks tests/bench/max_fit.py against independent `tandem plan --json` calls.

    max_fit_test.py TANDEM_PLAN SOURCE_DIR

The tiny GPT on a device shrunk to 256 MiB (--set cluster.hbm_gib=0.25) so that the limits are
reached at small sizes. What must hold, whatever the planner's numbers are:
- the value found is a multiple of the granule, the plan at it fits and reports the peak max_fit
  reports, the plan one granule above does not fit (the bisection's invariant at its end);
- with --times, the tied field is set at every point (the plan at the answer with global batch 4 x
  micro-batch fits; one more micro-batch does not);
- a point the planner rejects as bad input ends the search as "invalid" with the planner's reason
  (ring self-attention at sp 2 with odd sequence lengths: 2 must divide model.seq_len);
- a device too small for the first point gives "none_fits", value 0.
Exit 0 when all hold, 1 otherwise.
"""

import json
import os
import re
import subprocess
import sys


def main():
    plan, src = sys.argv[1], sys.argv[2]
    script = os.path.join(src, "tests", "bench", "max_fit.py")
    scenario = os.path.join(src, "scenarios", "tiny-gpt.textproto")
    small = ["--set", "cluster.hbm_gib=0.25"]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    def max_fit(*args):
        r = subprocess.run([sys.executable, script, scenario, "--plan", plan, *small, *args],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"max_fit {args}: exit {r.returncode} {r.stderr}")
        return json.loads(r.stdout)

    def plan_at(*sets):
        cmd = [plan, scenario, "--json", *small]
        for kv in sets:
            cmd += ["--set", kv]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, f"plan {sets}: exit {r.returncode} {r.stderr}")
        return json.loads(r.stdout)

    # Longest sequence, multiples of 64.
    f = max_fit("--field", "model.seq_len", "--granule", "64")
    check(f["status"] == "ok", f"seq_len status {f}")
    v = f["value"]
    check(v > 0 and v % 64 == 0, f"seq_len value {v} a positive multiple of 64")
    at, above = plan_at(f"model.seq_len={v}"), plan_at(f"model.seq_len={v + 64}")
    check(at["fits"] and at["peak_memory_bytes"] == f["peak_bytes"], f"plan at {v}: {at['fits']} {at['peak_memory_bytes']}")
    check(not above["fits"] and f["next_value"] == v + 64, f"plan at {v + 64} fits: {above['fits']}")

    # Largest micro-batch with the global batch tied to 4 micro-batches.
    f = max_fit("--field", "strategy.micro_batch", "--times", "strategy.global_batch=4")
    m = f["value"]
    check(f["status"] == "ok" and m > 0, f"micro_batch {f}")
    at = plan_at(f"strategy.micro_batch={m}", f"strategy.global_batch={4 * m}")
    above = plan_at(f"strategy.micro_batch={m + 1}", f"strategy.global_batch={4 * (m + 1)}")
    check(at["fits"] and not above["fits"], f"micro_batch {m} fits and {m + 1} does not")
    seq = int(re.search(r"^\s*seq_len:\s*(\d+)", open(scenario).read(), re.M).group(1))
    check(at["tokens_per_iteration"] == 4 * m * seq, f"tokens per iteration {at['tokens_per_iteration']} = 4 x {m} x {seq}")

    # Invalid: ring self-attention at sp 2 needs an even sequence; granule 3 gives 3 first.
    f = max_fit("--field", "model.seq_len", "--granule", "3", "--set", "cluster.gpus=2", "--set", "strategy.sp=2",
                "--set", "strategy.sp_mode=ring", "--set", "strategy.flash_attention=false")
    check(f["status"] == "invalid" and "must divide model.seq_len = 3" in f["reason"], f"invalid {f}")

    # Nothing fits on a device of 1 MiB.
    r = subprocess.run([sys.executable, script, scenario, "--plan", plan, "--set", "cluster.hbm_gib=0.0009765625",
                        "--field", "model.seq_len", "--granule", "64"], capture_output=True, text=True)
    f = json.loads(r.stdout)
    check(f["status"] == "none_fits" and f["value"] == 0, f"none_fits {f}")

    print("max_fit_test:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
