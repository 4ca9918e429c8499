#!/usr/bin/env python3
"""Fit traces/calibration/host_twin_residuals.tsv: the host twin bench's residuals, the q10, q50
and q90 of measured / predicted over every row of the given tests/bench/host_twin_error.py runs
(each run's DIR/rows.json), for the interval of a prediction made with a host calibration profile
(sim/prediction_interval_calibrated.h, evidence (b)). Quantiles: linear interpolation between order
statistics, as tests/bench/fit_prediction_intervals.py.

  tests/bench/fit_host_twin_residuals.py DIR [DIR ...] [--out traces/calibration/host_twin_residuals.tsv]
                                         [--note TEXT]

Every row counts, the own configuration's too: each is a run measured after the profile was made,
none of them part of it. The header names the runs (their date, load, calibration runs and steps),
this commit and the command, so that the table says what it was measured on; refit it (and say so
in docs/exec.md) when the host model changes. The rows are of this machine (the 2-vCPU development
VM) and the tiny GPT: a residual of the model on them, not a law for other machines.
"""
import argparse, json, math, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_prediction_intervals import quantile  # noqa: E402  (the same linear-interpolation quantile)


def commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", help="output directories of tests/bench/host_twin_error.py runs")
    ap.add_argument("--out", default=os.path.join(ROOT, "traces", "calibration", "host_twin_residuals.tsv"))
    ap.add_argument("--note", default="", help="a line for the header (what the machine was doing)")
    a = ap.parse_args()
    ratios, runs = [], []
    for d in a.dirs:
        with open(os.path.join(d, "rows.json")) as f:
            j = json.load(f)
        rows = j["rows"]
        if not rows:
            sys.exit(f"{d}/rows.json holds no row")
        for r in rows:
            if not (r["predicted_s"] > 0 and r["measured_s"] > 0):
                sys.exit(f"{d}/rows.json: row {r['config']} has no positive times")
            ratios.append(r["measured_s"] / r["predicted_s"])
        loads = [r["load"] for r in rows]
        runs.append(f"{j['date_utc']} UTC ({len(rows)} rows, {j['calibration_runs']} calibration runs of {j['steps']} steps, "
                    f"{'SCHED_FIFO' if j['realtime'] else 'default scheduling'}, load {min(loads):.1f}-{max(loads):.1f})")
    q10, q50, q90 = (quantile(ratios, p) for p in (0.1, 0.5, 0.9))
    lines = [
        "# The host twin bench's residuals: measured / predicted iteration time of every row of the runs below",
        "# (tests/bench/host_twin_error.py: tiny GPT, host preset, 2-vCPU development VM; each row a run measured",
        "# after its profile was made). The interval of a host-calibrated prediction (sim/prediction_interval_calibrated.h).",
        "# Written by tests/bench/fit_host_twin_residuals.py; do not edit by hand.",
        f"# Fit {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC at commit {commit()}, {len(ratios)} rows of "
        f"{len(runs)} bench runs:",
    ]
    lines += [f"#   {r}" for r in runs]
    if a.note:
        lines.append(f"# {a.note}")
    lines += ["rows\tq10\tq50\tq90", f"{len(ratios)}\t{q10:.4f}\t{q50:.4f}\t{q90:.4f}"]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{a.out}: {len(ratios)} rows, q10 {q10:.4f}, q50 {q50:.4f}, q90 {q90:.4f}")


if __name__ == "__main__":
    sys.exit(main())
