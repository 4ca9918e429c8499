#!/usr/bin/env python3
"""The twin loop on this machine (issue 13, docs/exec.md "Host twin error"): `tandem run` one
configuration of the tiny GPT with a trace, `tandem calibrate` on it, then for that configuration
and every other one below `tandem sim --calibration` (the prediction, made first) and `tandem run`
(the measurement, afterwards), and print predicted / measured / error, the measured spread of the
steady-state steps (IQR relative to the median) and the median per-task error (tandem compare).
Every configuration uses at most as many ranks as this machine has cores.

  tests/bench/host_twin_error.py [--bin build/bin] [--steps 40] [--out DIR] [--only NAME,...] [--realtime [--rt-priority N]]
                                [--calibration-runs N]

--calibration-runs N (default 3) measures the calibration configuration N times and calibrates on
all of them (`tandem calibrate TRACE ... SCENARIO`: a shape's time is the median over the runs of each
run's mean), which prints each run's iteration and spread and the run-to-run spread: on this VM one
configuration drifts by more than the targets between runs, and a single calibration run that
caught a slow or noisy moment set every prediction of its profile (docs/exec.md, session 11 quiet
runs).

Each row is also predicted for the machine's state at that moment (`tandem run --probe-state`
right before the prediction, `tandem sim --state-probe`: the profile's collectives and Allocs/Frees
scaled by the probe's zero-fill ratio to the calibration runs' own probes, kernels by its compute
ratio; docs/exec.md sessions 13 and 14): columns `state pred` and `state err`, and the probe's
ratios. Not the default prediction (session 14: it helps where the state changed and hurts where
it did not). --no-state-probe leaves it out.

The calibration's side of that ratio is taken the same way (session 15): `tandem run --probe-state`
alone right before each calibration run, given to `tandem calibrate --state-probe` (the profile's
state is their median). --calibration-probe after takes the runs' own probes instead (after their
steps, in the same processes: sessions 13-14). Each row is also scaled against the other one (the
probe file's fields times alone / after, so that the ratio is now / after with the same profile):
column `after err` and rows.json's state_after_predicted_s, for tests/bench/host_state_probe.py
--tracking, which compares how well each ratio follows the measured move.

Each row also gives the prediction interval `tandem sim` printed (its 80 % band,
sim/prediction_interval_calibrated.h) and whether the measured time fell inside; DIR/rows.json keeps
every row (predicted, measured, interval, evidence, load) for tests/bench/fit_host_twin_residuals.py.

--realtime runs every `tandem run` under `chrt -f 1` (SCHED_FIFO; needs root or CAP_SYS_NICE). On a
machine shared with other jobs, `nice` does not give a measurement the CPU: with the kernel's
autogroups (/proc/sys/kernel/sched_autogroup_enabled = 1) every session gets an equal share whatever
its processes' nice, and a rank that is not running stalls its peers in every collective
(docs/exec.md, "Where the time goes"). Under SCHED_FIFO the ranks run until the kernel's real-time
throttling (95 % of each second by default) lets the others in. Another session's SCHED_FIFO process
of the same priority is not preempted: a rank on its core waits until it ends (a collective waits
with it); --rt-priority 2 then runs the measurement above it.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "scenarios", "tiny-gpt.textproto")
HOST = ["cluster.preset=host"]

# name, ranks, --set overrides (on top of the host preset; global_batch 8 = 4 micro-batches of 2).
CALIBRATION = ("tp2", 2, ["strategy.tp=2"])
CONFIGS = [
    CALIBRATION,
    ("tp2-8mb", 2, ["strategy.tp=2", "strategy.global_batch=16"]),
    ("tp2-mb4", 2, ["strategy.tp=2", "strategy.micro_batch=4"]),
    ("dp2", 2, []),
    ("pp2-1f1b", 2, ["strategy.pp=2", "strategy.pp_schedule=1f1b"]),
    ("zero1-dp2", 2, ["strategy.zero_stage=1"]),
    ("zero2-dp2", 2, ["strategy.zero_stage=2"]),
    ("zero3-dp2", 2, ["strategy.zero_stage=3"]),
    ("tp2-sp", 2, ["strategy.tp=2", "strategy.sp_mode=megatron"]),
    ("tp2-recompute", 2, ["strategy.tp=2", "strategy.recompute=full"]),
    ("1rank", 1, []),
]


def sets_of(ranks, extra):
    out = []
    for s in HOST + [f"cluster.gpus={ranks}"] + extra:
        out += ["--set", s]
    return out


def sh(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + p.stderr.strip()[-800:])
    return p.stdout


REALTIME = []


def run(b, name, ranks, extra, steps, out):
    trace = os.path.join(out, name + ".measured.trace")
    j = json.loads(sh(REALTIME + [os.path.join(b, "tandem-run"), "-n", str(ranks), TINY] + sets_of(ranks, extra) +
                      ["--steps", str(steps), "--json", "--trace", trace]))
    return j, trace


def predict(b, name, ranks, extra, profile, out, state_probe=None):
    trace = os.path.join(out, name + (".state" if state_probe else "") + ".predicted.trace")
    j = json.loads(sh([os.path.join(b, "tandem-sim"), TINY] + sets_of(ranks, extra) +
                      ["--calibration", profile, "--json", "--trace", trace] +
                      (["--state-probe", state_probe] if state_probe else [])))
    return j, trace


def probe_state(b, ranks, path):
    sh(REALTIME + [os.path.join(b, "tandem-run"), "--probe-state", path, "-n", str(ranks)])
    return path


PROBE_FIELDS = ["allreduce_256b_s", "allreduce_16kib_s", "zero_fill_1mib_s", "compute_s"]


def read_probe(path):
    out = {}
    for line in open(path):
        k, v = line.rstrip("\n").split("\t")
        out[k] = float(v)
    return out


def field_medians(probes):
    return {f: statistics.median(p[f] for p in probes) for f in PROBE_FIELDS}


def rebased_probe(now_path, alone, after, path):
    """The probe file whose ratio to `alone` (the profile's) is now / `after`: scaling by it is scaling
    against the calibration runs' own probes with the same profile."""
    now = read_probe(now_path)
    with open(path, "w") as f:
        for k, v in now.items():
            f.write(f"{k}\t{v * alone[k] / after[k] if k in PROBE_FIELDS else int(v)}\n")
    return path


def per_task_median_error(b, predicted, measured, out):
    j = json.loads(sh([os.path.join(b, "tandem-compare"), predicted, measured, "-o",
                       os.path.join(out, "compare.html"), "--json"]))
    # The median over matched events of the per-event error, from the per-label medians weighted by
    # their counts (compare keeps medians per label, not every event).
    pts = sorted((l["median_error"], l["count"]) for l in j["labels"]
                 if l.get("median_error") is not None and l["kind"] not in ("alloc", "free"))
    total = sum(c for _, c in pts)
    acc = 0
    for e, c in pts:
        acc += c
        if acc * 2 >= total:
            return e
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--realtime", action="store_true", help="run the measurements under chrt -f 1")
    ap.add_argument("--rt-priority", type=int, default=1, help="the SCHED_FIFO priority of --realtime")
    ap.add_argument("--calibration-runs", type=int, default=3, help="calibrate over this many runs")
    ap.add_argument("--no-state-probe", action="store_true", help="no prediction for the machine's state now")
    ap.add_argument("--calibration-probe", choices=["alone", "after"], default="alone",
                    help="the profile's state: probes taken alone before the calibration runs, or the runs' own")
    a = ap.parse_args()
    if a.realtime:
        REALTIME[:] = ["chrt", "-f", str(a.rt_priority)]
    out = a.out or tempfile.mkdtemp(prefix="host-twin-")
    os.makedirs(out, exist_ok=True)
    cores = os.cpu_count() or 1
    name, ranks, extra = CALIBRATION
    cal_traces, cal_runs, cal_probes = [], [], []
    for i in range(max(1, a.calibration_runs)):
        if not a.no_state_probe:  # the probe alone right before the run, as a prediction's
            cal_probes.append(probe_state(a.bin, ranks, os.path.join(out, f"calibration{i + 1}.state-probe.txt")))
        cal, cal_trace = run(a.bin, name + f"-calibration{i + 1 if i else ''}", ranks, extra, a.steps, out)
        cal_traces.append(cal_trace)
        cal_runs.append(cal)
    cal_ms = " / ".join(f"{c['iteration_time_s'] * 1e3:.2f}" for c in cal_runs)
    cal_iqr = " / ".join(f"{100 * c['steady_state']['relative_iqr']:.1f}" for c in cal_runs)
    profile = os.path.join(out, "host-profile.pb")
    alone_args = [x for f in cal_probes for x in ("--state-probe", f)] if a.calibration_probe == "alone" else []
    p = subprocess.run(REALTIME + [os.path.join(a.bin, "tandem-calibrate")] + cal_traces + [TINY] + sets_of(ranks, extra) +
                       ["-o", profile] + alone_args, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError("tandem-calibrate: " + p.stderr.strip()[-800:])
    sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines()[1:]) + p.stderr)
    print(f"calibrated on {name} ({ranks} ranks, {a.steps} steps, {len(cal_runs)} run(s)): iteration {cal_ms} ms, "
          f"steady-state IQR {cal_iqr} %; {cores} cores; placement "
          f"{cal['placement']}; {f'SCHED_FIFO {a.rt_priority}' if a.realtime else 'default scheduling'}; load average "
          f"{os.getloadavg()[0]:.1f}")
    after = field_medians([c["state_probe"] for c in cal_runs]) if not a.no_state_probe else None
    alone = field_medians([read_probe(f) for f in cal_probes]) if cal_probes else None
    profile_probe = alone if a.calibration_probe == "alone" else after
    only = set(a.only.split(",")) if a.only else None
    rows = []
    records = []
    print(f"{'config':<15} {'ranks':>5} {'predicted':>11} {'measured':>11} {'error':>8} {'IQR':>6} {'task med':>9} "
          f"{'80 % interval':>19} {'in':>3} {'load':>5} {'state pred':>11} {'state err':>9} {'comm x':>6} {'mem x':>6} "
          f"{'after err':>9} {'state task':>10}")
    evidence = set()
    for name, ranks, extra in CONFIGS:
        if only and name not in only:
            continue
        if ranks > cores:
            print(f"{name:<15} skipped: {ranks} ranks > {cores} cores")
            continue
        pj, ptrace = predict(a.bin, name, ranks, extra, profile, out)  # the prediction first
        pred = pj["iteration_time_s"]
        lo, hi = pj["iteration_time_interval_s"]
        spred, sratio, strace, apred = None, {}, None, None
        if not a.no_state_probe and ranks >= 2:  # a probe needs two ranks
            now = probe_state(a.bin, ranks, os.path.join(out, name + ".state-probe.txt"))
            sj, strace = predict(a.bin, name, ranks, extra, profile, out, now)
            spred = sj["iteration_time_s"]
            sratio = sj["prediction_interval"].get("state_probe", {})
            # The same row scaled against the other calibration probe (alone <-> after its steps).
            other = after if a.calibration_probe == "alone" else alone
            if other:
                aj, _ = predict(a.bin, name + ".other-reference", ranks, extra, profile, out,
                                rebased_probe(now, profile_probe, other, os.path.join(out, name + ".state-probe-other.txt")))
                apred = aj["iteration_time_s"]
        evidence.add(pj["prediction_interval"].get("evidence", "reference-residuals"))
        meas, mtrace = run(a.bin, name, ranks, extra, a.steps, out)
        m = meas["iteration_time_s"]
        err = (pred - m) / m
        task = per_task_median_error(a.bin, ptrace, mtrace, out)
        stask = per_task_median_error(a.bin, strace, mtrace, out) if strace else None
        iqr = meas["steady_state"]["relative_iqr"]
        inside = lo <= m <= hi
        load = os.getloadavg()[0]
        serr = (spred - m) / m if spred else None
        aerr = (apred - m) / m if apred else None
        rows.append((name, err, task, inside, serr, stask))
        records.append({"config": name, "ranks": ranks, "predicted_s": pred, "measured_s": m, "measured_relative_iqr": iqr,
                        "interval_s": [lo, hi], "evidence": pj["prediction_interval"].get("evidence", "reference-residuals"),
                        "per_task_median_error": task, "load": load, "state_predicted_s": spred,
                        "state_ratios": sratio, "state_probe_in_run": meas.get("state_probe"),
                        "state_per_task_median_error": stask,
                        # the scaled prediction against the other calibration probe (the profile's is
                        # calibration_probe): alone <-> after its steps
                        "state_other_reference_predicted_s": apred})
        print(f"{name:<15} {ranks:>5} {pred*1e3:>8.2f} ms {m*1e3:>8.2f} ms {100*err:>+7.1f}% {100*iqr:>5.1f}% "
              f"{100*task:>+8.1f}% {lo*1e3:>7.2f} .. {hi*1e3:>6.2f} ms {'yes' if inside else 'no':>3} {load:>5.1f}" +
              (f" {spred*1e3:>8.2f} ms {100*serr:>+8.1f}% {sratio.get('communication_ratio', 0):>6.3f} "
               f"{sratio.get('memory_ratio', 0):>6.3f}" if spred else "") +
              (f" {100*aerr:>+8.1f}%" if apred else "") + (f" {100*stask:>+9.1f}%" if stask is not None else ""),
              flush=True)
    others = [abs(e) for n, e, _, _, _, _ in rows if n != CALIBRATION[0]]
    own = [abs(e) for n, e, _, _, _, _ in rows if n == CALIBRATION[0]]
    if own:
        print(f"own calibration configuration (a second run): |error| {100*own[0]:.1f} %")
    if others:
        print(f"other configurations ({len(others)}): median |error| {100*statistics.median(others):.1f} %, "
              f"worst {100*max(others):.1f} %")
    tasks = [abs(t) for _, _, t, _, _, _ in rows if t == t]
    if tasks:
        print(f"per-task median error: median over configurations {100*statistics.median(tasks):.1f} %")
    sothers = [abs(se) for n, _, _, _, se, _ in rows if n != CALIBRATION[0] and se is not None]
    sown = [abs(se) for n, _, _, _, se, _ in rows if n == CALIBRATION[0] and se is not None]
    if sown:
        print(f"  for the state probed now: own |error| {100*sown[0]:.1f} %", end="")
    if sothers:
        print(f"; other configurations ({len(sothers)}): median |error| {100*statistics.median(sothers):.1f} %, "
              f"worst {100*max(sothers):.1f} %", end="")
    stasks = [abs(t) for *_, t in rows if t is not None and t == t]
    if stasks:
        print(f"; per-task median {100*statistics.median(stasks):.1f} %", end="")
    if sown or sothers:
        print()
    if rows:
        print(f"interval coverage: {sum(1 for r in rows if r[3])} of {len(rows)} measured times inside the predicted "
              f"80 % interval (evidence: {', '.join(sorted(evidence))})")
    with open(os.path.join(out, "rows.json"), "w") as f:
        json.dump({"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "steps": a.steps,
                   "calibration_runs": a.calibration_runs, "realtime": a.realtime, "cores": cores,
                   "calibration_iteration_s": [c["iteration_time_s"] for c in cal_runs],
                   "calibration_relative_iqr": [c["steady_state"]["relative_iqr"] for c in cal_runs],
                   "calibration_state_probe": [c.get("state_probe") for c in cal_runs],
                   "calibration_state_probe_alone": [read_probe(f) for f in cal_probes],
                   "calibration_probe": a.calibration_probe, "profile_state_probe": profile_probe,
                   "rows": records}, f, indent=1)
    print(f"files in {out}")


if __name__ == "__main__":
    sys.exit(main())
