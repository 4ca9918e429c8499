#!/usr/bin/env python3
"""Fit traces/calibration/host_twin_residuals.tsv: the host twin bench's residuals, the q10, q50
and q90 of measured / predicted over every row of the given tests/bench/host_twin_error.py runs
(each run's DIR/rows.json), for the interval of a prediction made with a host calibration profile
(sim/prediction_interval_calibrated.h, evidence (b)). Quantiles: linear interpolation between order
statistics, as tests/bench/fit_prediction_intervals.py.

  tests/bench/fit_host_twin_residuals.py DIR [DIR ...] [--out traces/calibration/host_twin_residuals.tsv]
                                         [--note TEXT]

Only single passes (`host_twin_error.py --rounds 1`): the interval is about one run's time after a
calibration, and a run in rounds is refused (exit 2; docs/exec.md "Session 16": its rows are medians
over rounds, and its profile was calibrated among the rows' runs). Every row counts, the own configuration's too: each is a run measured after the profile was made,
none of them part of it. The header names the runs (their date, load, calibration runs and steps),
this commit and the command, so that the table says what it was measured on; refit it (and say so
in docs/exec.md) when the host model changes. The rows are of this machine (the 2-vCPU development
VM) and the tiny GPT: a residual of the model on them, not a law for other machines.

--held-out also measures the interval's held-out coverage, leaving one bench run out at a time: the
quantiles fit on the other runs' rows, the run's own calibration spread h from its rows.json (as
sim/prediction_interval_calibrated.cc computes it from the profile: 0.95 x the median step IQR and
1.28155 x the runs' relative standard deviation, in quadrature), and per row whether the measured
time lies in t [q50 - max(q50 - q10, h), q50 + max(q90 - q50, h)] held to include t. Printed, not written.

--scaled fits the residuals of the predictions scaled to the machine state probed before the row
(`tandem sim --state-probe`, the bench's `state pred` column, rows.json state_predicted_s) instead
of the plain ones: measured / state-predicted over the rows that have one (the 1-rank row has no
probe), and with --held-out their leave-one-run-out coverage. Without --out it prints the table and
writes nothing; --out traces/calibration/host_twin_residuals_scaled.tsv writes the table compiled in
for the interval of a `tandem sim --state-probe` prediction (docs/exec.md "Session 15": fit on bench
runs of one build whose calibration probes were taken alone before each calibration run).
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


HALF_WIDTH_PER_IQR = 1.2815516 / 1.3489795
HALF_WIDTH_PER_SIGMA = 1.2815516


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def spread_half_width(j):
    """h of sim/prediction_interval_calibrated.cc from a bench run's calibration runs."""
    iqrs, times = j.get("calibration_relative_iqr", []), j.get("calibration_iteration_s", [])
    s = 0.0
    if len(times) >= 2:
        mean = sum(times) / len(times)
        s = math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1)) / median(times)
    if not iqrs and len(times) < 2:
        return -1.0
    step = HALF_WIDTH_PER_IQR * median(iqrs) if iqrs else 0.0
    return math.hypot(step, HALF_WIDTH_PER_SIGMA * s)


def predicted_of(r, scaled):
    """The row's prediction: the plain one, or with `scaled` the one scaled to the probe (None if none)."""
    return r.get("state_predicted_s") if scaled else r["predicted_s"]


def held_out(runs_json, names, scaled):
    inside_all = total = 0
    for i, j in enumerate(runs_json):
        others = [r["measured_s"] / predicted_of(r, scaled) for k, o in enumerate(runs_json) if k != i for r in o["rows"]
                  if predicted_of(r, scaled)]
        q10, q50, q90 = (quantile(others, p) for p in (0.1, 0.5, 0.9))
        h = spread_half_width(j)
        inside = 0
        rows = [r for r in j["rows"] if predicted_of(r, scaled)]
        for r in rows:
            t = predicted_of(r, scaled)
            lo = max(0.0, min(t, t * (q50 - max(q50 - q10, h))))
            hi = max(t, t * (q50 + max(q90 - q50, h)))
            inside += lo <= r["measured_s"] <= hi
        inside_all += inside
        total += len(rows)
        print(f"held out {names[i]}: {inside} of {len(rows)} inside (others' rows q10 {q10:.4f} q50 {q50:.4f} "
              f"q90 {q90:.4f}, h {h:.4f})")
    print(f"held-out coverage, one run left out at a time: {inside_all} of {total} ({100 * inside_all / total:.0f} %) "
          f"for a nominal 80 %")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", help="output directories of tests/bench/host_twin_error.py runs")
    ap.add_argument("--out", default=None, help="the table to write (default: host_twin_residuals.tsv; none with --scaled: "
                    "name host_twin_residuals_scaled.tsv)")
    ap.add_argument("--scaled", action="store_true", help="the residuals of the predictions scaled to the state probe")
    ap.add_argument("--note", default="", help="a line for the header (what the machine was doing)")
    ap.add_argument("--held-out", action="store_true", help="also the leave-one-run-out coverage of the interval")
    a = ap.parse_args()
    if a.out is None and not a.scaled:
        a.out = os.path.join(ROOT, "traces", "calibration", "host_twin_residuals.tsv")
    ratios, runs, runs_json = [], [], []
    for d in a.dirs:
        with open(os.path.join(d, "rows.json")) as f:
            j = json.load(f)
        if j.get("rounds", 1) > 1:
            print(f"{d}/rows.json: field rounds is {j['rounds']}: a run in rounds (--rounds R > 1) is not evidence for "
                  "this table: its rows are each configuration's median over rounds, not one run, and its rounds' "
                  "runs were predicted from calibration runs made among them, not before them; fit on --rounds 1 "
                  "runs (docs/exec.md \"Session 16\")", file=sys.stderr)
            sys.exit(2)
        runs_json.append(j)
        rows = [r for r in j["rows"] if predicted_of(r, a.scaled)]
        if not rows:
            sys.exit(f"{d}/rows.json holds no row")
        for r in rows:
            if not (predicted_of(r, a.scaled) > 0 and r["measured_s"] > 0):
                sys.exit(f"{d}/rows.json: row {r['config']} has no positive times")
            ratios.append(r["measured_s"] / predicted_of(r, a.scaled))
        loads = [r["load"] for r in rows]
        runs.append(f"{j['date_utc']} UTC ({len(rows)} rows, {j['calibration_runs']} calibration runs of {j['steps']} steps, "
                    f"{'SCHED_FIFO' if j['realtime'] else 'default scheduling'}, load {min(loads):.1f}-{max(loads):.1f})")
    q10, q50, q90 = (quantile(ratios, p) for p in (0.1, 0.5, 0.9))
    what = "measured / predicted scaled to the state probe (--state-probe)" if a.scaled else "measured / predicted"
    lines = [
        f"# The host twin bench's residuals: {what} iteration time of every row of the runs below",
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
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"{a.out or 'not written'}: {len(ratios)} rows, q10 {q10:.4f}, q50 {q50:.4f}, q90 {q90:.4f}")
    if a.held_out:
        held_out(runs_json, a.dirs, a.scaled)


if __name__ == "__main__":
    sys.exit(main())
