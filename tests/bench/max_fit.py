#!/usr/bin/env python3
"""The largest value of one scenario field that fits in device memory, by tandem's planner.

    max_fit.py SCENARIO --field model.seq_len --granule 1024 [--set k=v ...]
               [--times strategy.global_batch=4] [--plan build/bin/tandem-plan] [--max N]

Tries field = granule * k for k = 1, 2, 4, ... until a point does not fit, then bisects between the
last that fits and the first that does not. "Fits" is `tandem plan --json`'s verdict: the planned
peak memory of the worst rank (docs/sequence.md: planned and measured peaks agree on the host runs)
against the device's HBM. The search assumes the peak grows with the field (it does for the
sequence length and the micro-batch: every activation and comm buffer is proportional to the
tokens of a micro-batch or to their square, nothing shrinks). `--times KEY=F` sets KEY to F times
the field's value at every point (the global batch with the micro-batch, so that the number of
micro-batches stays F).

A point the planner rejects as bad input (exit 2: a divisibility rule, an unsupported combination)
is reported, not searched past: the answer is then "invalid" with the planner's message.

Prints one JSON object: {"field", "granule", "value" (largest that fits, 0 if none),
"peak_bytes" at it, "next_value", "next_peak_bytes" (the first that does not fit), "hbm_bytes",
"plans" (how many plans ran), "status": "ok" | "none_fits" | "invalid" | "limit", "reason"}.
Exit 0 whatever the status; 2 for bad arguments.
"""

import argparse
import json
import os
import subprocess
import sys


def plan(args, value):
    """One `tandem plan --json` at field = value: (status, json or message)."""
    cmd = [args.plan, args.scenario, "--json", "--set", f"{args.field}={value}"]
    for kv in args.set:
        cmd += ["--set", kv]
    for key, factor in args.times:
        cmd += ["--set", f"{key}={factor * value}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 2:
        return "invalid", (r.stderr or r.stdout).strip()
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return "ok", json.loads(r.stdout)


def search(args):
    result = {"field": args.field, "granule": args.granule, "value": 0, "peak_bytes": None,
              "next_value": None, "next_peak_bytes": None, "hbm_bytes": None, "plans": 0,
              "status": "ok", "reason": ""}
    cache = {}

    def fits(k):
        if k not in cache:
            result["plans"] += 1
            cache[k] = plan(args, k * args.granule)
        status, out = cache[k]
        if status == "invalid":
            return None
        result["hbm_bytes"] = out["hbm_bytes"]
        return bool(out["fits"])

    def finish(lo, hi):
        if lo > 0:
            result["value"] = lo * args.granule
            result["peak_bytes"] = cache[lo][1]["peak_memory_bytes"]
        if hi is not None:
            result["next_value"] = hi * args.granule
            result["next_peak_bytes"] = cache[hi][1]["peak_memory_bytes"]
        return result

    def invalid(k):
        result["status"] = "invalid"
        result["reason"] = f"{args.field}={k * args.granule}: {cache[k][1]}"
        return result

    first = fits(1)
    if first is None:
        return invalid(1)
    if not first:
        result["status"] = "none_fits"
        return finish(0, 1)
    lo, hi = 1, None
    while hi is None:  # double until a point does not fit
        k = lo * 2
        if k * args.granule > args.max:
            result["status"] = "limit"
            result["reason"] = f"{args.field}={lo * args.granule} fits and the next doubling passes --max {args.max}"
            return finish(lo, None)
        f = fits(k)
        if f is None:
            return invalid(k)
        if f:
            lo = k
        else:
            hi = k
    while hi - lo > 1:  # invariant: lo fits, hi does not
        mid = (lo + hi) // 2
        f = fits(mid)
        if f is None:
            return invalid(mid)
        if f:
            lo = mid
        else:
            hi = mid
    return finish(lo, hi)


def parse_times(text):
    key, sep, factor = text.partition("=")
    if not sep or not key or not factor.isdigit() or int(factor) < 1:
        raise argparse.ArgumentTypeError(f"--times {text}: expected KEY=POSITIVE_INTEGER")
    return key, int(factor)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenario")
    p.add_argument("--field", required=True, help="the scenario field to maximise, part.field")
    p.add_argument("--granule", type=int, default=1, help="the field takes multiples of this")
    p.add_argument("--set", action="append", default=[], help="override passed to every plan")
    p.add_argument("--times", action="append", default=[], type=parse_times,
                   help="KEY=F: set KEY to F times the field's value at every point")
    p.add_argument("--max", type=int, default=1 << 40, help="stop doubling past this value")
    p.add_argument("--plan", default=os.path.join(here, "..", "..", "build", "bin", "tandem-plan"))
    args = p.parse_args()
    if args.granule < 1:
        p.error("--granule must be positive")
    try:
        print(json.dumps(search(args)))
    except RuntimeError as e:
        print(f"max_fit.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
