#!/usr/bin/env python3
"""The twin loop on this machine (issue 13, docs/exec.md "Host twin error"): `tandem run` one
configuration of the tiny GPT with a trace, `tandem calibrate` on it, then for that configuration
and every other one below `tandem sim --calibration` (the prediction) and `tandem run` (the
measurement; in rounds by default, below), and print predicted / measured / error, the measured spread of the
steady-state steps (IQR relative to the median) and the median per-task error (tandem compare).
Every configuration uses at most as many ranks as this machine has cores; --shared-cores adds
configurations of 4 ranks, which on a machine with fewer cores share them (reported apart, not in
the targets; run without --realtime, under which ranks do not time-share).

  tests/bench/host_twin_error.py [--bin build/bin] [--steps 40] [--out DIR] [--only NAME,...] [--realtime [--rt-priority N]]
                                [--rounds R] [--seed S] [--calibration-runs N]

--rounds R (default 5; docs/exec.md "Session 16"): this VM's speed drifts by 10-20 % over tens of
seconds even when nothing else runs, so one run of a configuration is one sample of a moving machine,
and a single pass in a fixed order puts the drift (and any order effect) on the same block of rows
every time. In rounds, every round runs every configuration once and calibration run k in round
k mod R (default: R calibration runs, one a round), each round in its own order, shuffled by one
random.Random(S) (--seed, default 16; the orders are printed and kept), so that the drift falls on
every configuration alike and the calibration samples the same stretch of time as the rows. Each
run is preceded by its state probe taken alone. After the last round the profile is calibrated on
the calibration runs' traces (and their probes) only, and each configuration predicted once: the
predictions are computed after the measurements, but no measurement of a row reaches them (the
profile's inputs are the calibration traces, the scenario and the calibration probes; a row's
traces are only compared against; a state-scaled prediction takes the probe taken alone right
before that row's run, as the single pass does). Computing them last is what lets the calibration
be spread over the rows' time. A configuration's measured time is the median over rounds of its
runs' steady-state iteration, printed with its spread over the rounds ((max - min) / median: the
machine's floor); its per-task error the median over rounds of each round's per-task median error
against the one prediction. Each round alone (its single runs against the pooled profile) is printed
too, and the interval's coverage is counted over single runs (an interval is about one run). rows.json
keeps per configuration the pooled record and every round's (rows[i].rounds), the orders and the
seed. --rounds 1 is the single pass: the calibration runs first, then per configuration, in the
list's order, the prediction (made first), the probe and the run, as before session 16.

--calibration-runs N (default 3 in a single pass, R in rounds) measures the calibration configuration N times and calibrates on
all of them (`tandem calibrate TRACE ... SCENARIO`: a shape's time is the median over the runs of each
run's mean), which prints each run's iteration and spread and the run-to-run spread: on this VM one
configuration drifts by more than the targets between runs, and a single calibration run that
caught a slow or noisy moment set every prediction of its profile (docs/exec.md, session 11 quiet
runs).

Each row is also predicted for the machine's state at that moment (`tandem run --probe-state`
right before the prediction, with the calibration's ranks, the 1-rank row too; `tandem sim
--state-probe`): since session 18 the profile keeps the times of each machine state its
calibration runs were measured in (traces/calibration/machine_states.h), and a probe that falls in
one predicts from that state's runs unscaled; one that falls in none scales the nearest state's
collectives and Allocs/Frees by the zero-fill ratio and its kernels by the compute ratio (sessions
13 and 14): columns `state pred` and `state err`, and the probe's ratios (1 in a calibrated state).
The summaries say whether all four #13 targets hold for it too, and how many probes fell in a
calibrated state. --no-state-probe leaves it out.

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_twin_rounds import (CALIBRATION_RUN, item_label, meets_targets, pooled_time, round_orders,  # noqa: E402
                              round_spread, target_summary)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "scenarios", "tiny-gpt.textproto")
HOST = ["cluster.preset=host"]

# name, ranks, --set overrides (on top of the host preset; global_batch 8 = 4 micro-batches of 2).
CALIBRATION = ("tp2", 2, ["strategy.tp=2"])
# --rounds: how many rounds by default (docs/exec.md "Session 16": from the lead's eight quiet single
# passes and this session's rounds), and the seed of their order.
DEFAULT_ROUNDS = 5
DEFAULT_SEED = 16
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
# --shared-cores: configurations of 4 ranks, which share the cores of a machine with fewer than 4
# (the CI machine's 2): predicted from the same profile (its runs fit the cores), the simulator
# sharing the cores among the ranks that compute (sim/host_core_share.h). Not in #13's targets
# (ranks <= cores); the summary gives them a line of their own.
SHARED_CONFIGS = [
    ("dp2-tp2", 4, ["strategy.tp=2"]),
    ("tp2-pp2-1f1b", 4, ["strategy.tp=2", "strategy.pp=2", "strategy.pp_schedule=1f1b"]),
    ("dp4", 4, []),
    ("zero2-dp4", 4, ["strategy.zero_stage=2"]),
]
CORES = [os.cpu_count() or 1]  # main() sets it; rows with more ranks share cores


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


def calibration_run(a, k, out, cal):
    """Calibration run k (0-based): the state probe alone right before it (as a prediction's), then the run."""
    name, ranks, extra = CALIBRATION
    if not a.no_state_probe:
        cal["probes"][k] = probe_state(a.bin, ranks, os.path.join(out, f"calibration{k + 1}.state-probe.txt"))
    cal["runs"][k], cal["traces"][k] = run(a.bin, name + f"-calibration{k + 1 if k else ''}", ranks, extra, a.steps, out)
    cal["loads"][k] = os.getloadavg()[0]


def calibrate(a, cal, out, cores):
    """`tandem calibrate` on the calibration runs (and their probes taken alone): the profile, and the
    calibration's side of the state ratios (alone, after, the profile's)."""
    name, ranks, extra = CALIBRATION
    cal_runs = cal["runs"]
    cal_ms = " / ".join(f"{c['iteration_time_s'] * 1e3:.2f}" for c in cal_runs)
    cal_iqr = " / ".join(f"{100 * c['steady_state']['relative_iqr']:.1f}" for c in cal_runs)
    profile = os.path.join(out, "host-profile.pb")
    probes = [f for f in cal["probes"] if f]
    alone_args = [x for f in probes for x in ("--state-probe", f)] if a.calibration_probe == "alone" else []
    p = subprocess.run(REALTIME + [os.path.join(a.bin, "tandem-calibrate")] + cal["traces"] + [TINY] + sets_of(ranks, extra) +
                       ["-o", profile] + alone_args, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError("tandem-calibrate: " + p.stderr.strip()[-800:])
    sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines()[1:]) + p.stderr)
    print(f"calibrated on {name} ({ranks} ranks, {a.steps} steps, {len(cal_runs)} run(s)): iteration {cal_ms} ms, "
          f"steady-state IQR {cal_iqr} %; {cores} cores; placement "
          f"{cal_runs[-1]['placement']}; {f'SCHED_FIFO {a.rt_priority}' if a.realtime else 'default scheduling'}; load average "
          f"{os.getloadavg()[0]:.1f}")
    after = field_medians([c["state_probe"] for c in cal_runs]) if not a.no_state_probe else None
    alone = field_medians([read_probe(f) for f in probes]) if probes else None
    profile_probe = alone if a.calibration_probe == "alone" else after
    return profile, {"alone": alone, "after": after, "profile": profile_probe}


def state_predictions(a, tag, ranks, extra, profile, out, now, ref):
    """The row predicted for the machine's state probed in `now` (`tandem sim --state-probe`), and the
    same scaled against the other calibration probe (alone <-> after its steps)."""
    sj, strace = predict(a.bin, tag, ranks, extra, profile, out, now)
    other = ref["after"] if a.calibration_probe == "alone" else ref["alone"]
    apred = None
    if other:
        aj, _ = predict(a.bin, tag + ".other-reference", ranks, extra, profile, out,
                        rebased_probe(now, ref["profile"], other, os.path.join(out, tag + ".state-probe-other.txt")))
        apred = aj["iteration_time_s"]
    return sj["iteration_time_s"], sj["prediction_interval"].get("state_probe", {}), strace, apred


def row_record(a, name, ranks, pj, ptrace, meas, mtrace, load, state, out):
    """One measured run of a configuration against its prediction: the record rows.json keeps."""
    pred = pj["iteration_time_s"]
    lo, hi = pj["iteration_time_interval_s"]
    spred, sratio, strace, apred = state or (None, {}, None, None)
    m = meas["iteration_time_s"]
    return {"config": name, "ranks": ranks, "predicted_s": pred, "measured_s": m,
            "measured_relative_iqr": meas["steady_state"]["relative_iqr"],
            "interval_s": [lo, hi], "evidence": pj["prediction_interval"].get("evidence", "reference-residuals"),
            "per_task_median_error": per_task_median_error(a.bin, ptrace, mtrace, out), "load": load,
            "state_predicted_s": spred, "state_ratios": sratio, "state_probe_in_run": meas.get("state_probe"),
            "state_per_task_median_error": per_task_median_error(a.bin, strace, mtrace, out) if strace else None,
            # the scaled prediction against the other calibration probe (the profile's is
            # calibration_probe): alone <-> after its steps
            "state_other_reference_predicted_s": apred}


def rel(x, m):
    return (x - m) / m if x else None


def print_summary(rows, prefix="", state=None):
    """The #13 targets over rows (records with config, predicted_s, measured_s, per_task_median_error and
    the state columns), as the single pass prints them; `state` ({config: (error, per-task error)})
    instead of the rows' state columns. Rows whose ranks share cores (--shared-cores) are not in the
    targets: a line of their own."""
    shared = [r for r in rows if r["ranks"] > CORES[0]]
    rows = [r for r in rows if r["ranks"] <= CORES[0]]
    if state is not None:
        state = {n: v for n, v in state.items() if n not in {r["config"] for r in shared}}
    if shared:
        errs = sorted(abs(rel(r["predicted_s"], r["measured_s"])) for r in shared)
        tasks = [r["per_task_median_error"] for r in shared]
        print(f"{prefix}ranks sharing the {CORES[0]} cores ({len(shared)} configurations, not in the targets): "
              f"median |error| {100*statistics.median(errs):.1f} %, worst {100*errs[-1]:.1f} %, per-task median "
              f"{100*statistics.median(tasks):.1f} %")
    s = target_summary({r["config"]: rel(r["predicted_s"], r["measured_s"]) for r in rows},
                       {r["config"]: r["per_task_median_error"] for r in rows}, CALIBRATION[0])
    if s["own"] is not None:
        print(f"{prefix}own calibration configuration (a second run): |error| {100*s['own']:.1f} %")
    if s["others"]:
        print(f"{prefix}other configurations ({s['others']}): median |error| {100*s['others_median']:.1f} %, "
              f"worst {100*s['others_worst']:.1f} %")
    if s["task_median"] is not None:
        print(f"{prefix}per-task median error: median over configurations {100*s['task_median']:.1f} %")
    if state is None:
        state = {r["config"]: (rel(r["state_predicted_s"], r["measured_s"]), r["state_per_task_median_error"])
                 for r in rows if r["state_predicted_s"]}
    ss = target_summary({n: e for n, (e, _) in state.items()},
                        {n: t for n, (_, t) in state.items() if t is not None}, CALIBRATION[0])
    if ss["own"] is not None:
        print(f"{prefix}  for the state probed now: own |error| {100*ss['own']:.1f} %", end="")
    if ss["others"]:
        print(f"; other configurations ({ss['others']}): median |error| {100*ss['others_median']:.1f} %, "
              f"worst {100*ss['others_worst']:.1f} %", end="")
    if ss["task_median"] is not None:
        print(f"; per-task median {100*ss['task_median']:.1f} %", end="")
    if ss["own"] is not None or ss["others"]:
        print()
    s["state"] = ss
    return s


ROW_HEADER = (f"{'config':<15} {'ranks':>5} {'predicted':>11} {'measured':>11} {'error':>8} {'IQR':>6} {'task med':>9} "
              f"{'80 % interval':>19} {'in':>3} {'load':>5} {'state pred':>11} {'state err':>9} {'comm x':>6} {'mem x':>6} "
              f"{'after err':>9} {'state task':>10}")


def print_row(r):
    pred, m, (lo, hi) = r["predicted_s"], r["measured_s"], r["interval_s"]
    spred, sratio, apred, stask = (r["state_predicted_s"], r["state_ratios"], r["state_other_reference_predicted_s"],
                                   r["state_per_task_median_error"])
    print(f"{r['config']:<15} {r['ranks']:>5} {pred*1e3:>8.2f} ms {m*1e3:>8.2f} ms {100*rel(pred, m):>+7.1f}% "
          f"{100*r['measured_relative_iqr']:>5.1f}% {100*r['per_task_median_error']:>+8.1f}% {lo*1e3:>7.2f} .. {hi*1e3:>6.2f} ms "
          f"{'yes' if lo <= m <= hi else 'no':>3} {r['load']:>5.1f}" +
          (f" {spred*1e3:>8.2f} ms {100*rel(spred, m):>+8.1f}% {sratio.get('communication_ratio', 0):>6.3f} "
           f"{sratio.get('memory_ratio', 0):>6.3f}" if spred else "") +
          (f" {100*rel(apred, m):>+8.1f}%" if apred else "") + (f" {100*stask:>+9.1f}%" if stask is not None else ""),
          flush=True)


def print_coverage(rows, what):
    evidence = sorted({r["evidence"] for r in rows})
    inside = sum(1 for r in rows if r["interval_s"][0] <= r["measured_s"] <= r["interval_s"][1])
    print(f"interval coverage: {inside} of {len(rows)} {what} inside the predicted 80 % interval "
          f"(evidence: {', '.join(evidence)})")


def single_pass(a, configs, out, cores):
    """--rounds 1: the calibration runs first, then per configuration in the fixed order the prediction
    (made first), the state probe and the run."""
    n = max(1, a.calibration_runs)
    cal = {"runs": [None] * n, "traces": [None] * n, "probes": [None] * n, "loads": [None] * n}
    for k in range(n):
        calibration_run(a, k, out, cal)
    profile, ref = calibrate(a, cal, out, cores)
    records = []
    print(ROW_HEADER)
    for name, ranks, extra in configs:
        pj, ptrace = predict(a.bin, name, ranks, extra, profile, out)  # the prediction first
        state = None
        if not a.no_state_probe:  # the machine's state, probed as the calibration's was (its ranks)
            now = probe_state(a.bin, CALIBRATION[1], os.path.join(out, name + ".state-probe.txt"))
            state = state_predictions(a, name, ranks, extra, profile, out, now, ref)
        meas, mtrace = run(a.bin, name, ranks, extra, a.steps, out)
        records.append(row_record(a, name, ranks, pj, ptrace, meas, mtrace, os.getloadavg()[0], state, out))
        print_row(records[-1])
    print_summary(records)
    if records:
        print_coverage(records, "measured times")
    return cal, ref, records, {"rounds": 1}


def in_rounds(a, configs, out, cores):
    """--rounds R > 1: every round runs every configuration once and its share of the calibration runs,
    in the round's shuffled order (each row's state probe alone right before its run); then the profile
    from the calibration runs alone, one prediction per configuration, and per round its error and
    per-task error against that round's run."""
    n = a.calibration_runs
    by_name = {c[0]: c for c in configs}
    orders = round_orders([c[0] for c in configs], n, a.rounds, a.seed)
    print(f"{a.rounds} rounds, order shuffled with seed {a.seed}; calibration run k in round k mod {a.rounds}:")
    for r, items in enumerate(orders):
        print(f"  round {r + 1}: " + " ".join(item_label(i) for i in items), flush=True)
    cal = {"runs": [None] * n, "traces": [None] * n, "probes": [None] * n, "loads": [None] * n}
    runs = {name: [None] * a.rounds for name in by_name}  # per configuration, per round: (json, trace, load, probe)
    started = time.time()
    for r, items in enumerate(orders):
        for name, k in items:
            if name == CALIBRATION_RUN:
                calibration_run(a, k, out, cal)
                continue
            _, ranks, extra = by_name[name]
            tag = f"{name}.round{r + 1}"
            now = (probe_state(a.bin, CALIBRATION[1], os.path.join(out, tag + ".state-probe.txt"))
                   if not a.no_state_probe else None)
            meas, mtrace = run(a.bin, tag, ranks, extra, a.steps, out)
            runs[name][r] = (meas, mtrace, os.getloadavg()[0], now)
        print(f"  round {r + 1} measured ({time.time() - started:.0f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
    profile, ref = calibrate(a, cal, out, cores)
    records, per_round = [], [[] for _ in range(a.rounds)]
    print(f"{'config':<15} {'ranks':>5} {'predicted':>11} {'median':>11} {'error':>8} {'spread':>7} {'IQR':>6} {'task med':>9} "
          f"{'80 % interval':>19} {'in':>5} {'load':>9} {'round 1':>11} {'r1 err':>8} {'state err':>9} {'state task':>10}")
    for name, ranks, extra in configs:
        pj, ptrace = predict(a.bin, name, ranks, extra, profile, out)
        rounds = []
        for r in range(a.rounds):
            meas, mtrace, load, now = runs[name][r]
            state = state_predictions(a, f"{name}.round{r + 1}", ranks, extra, profile, out, now, ref) if now else None
            rounds.append(row_record(a, name, ranks, pj, ptrace, meas, mtrace, load, state, out))
            rounds[-1]["round"] = r + 1
            rounds[-1]["position"] = next(i for i, it in enumerate(orders[r]) if it[0] == name) + 1
            per_round[r].append(rounds[-1])
        times = [x["measured_s"] for x in rounds]
        m = pooled_time(times)
        states = [rel(x["state_predicted_s"], x["measured_s"]) for x in rounds if x["state_predicted_s"]]
        stasks = [x["state_per_task_median_error"] for x in rounds if x["state_per_task_median_error"] is not None]
        rec = {"config": name, "ranks": ranks, "predicted_s": pj["iteration_time_s"], "measured_s": m,
               "measured_rounds_s": times, "round_spread": round_spread(times),
               "measured_relative_iqr": statistics.median(x["measured_relative_iqr"] for x in rounds),
               "interval_s": rounds[0]["interval_s"], "evidence": rounds[0]["evidence"],
               # the median over rounds of each round's per-task median error against the one prediction
               "per_task_median_error": statistics.median(x["per_task_median_error"] for x in rounds),
               "load": [min(x["load"] for x in rounds), max(x["load"] for x in rounds)],
               "state_error_median": statistics.median(states) if states else None,
               "state_per_task_median_error": statistics.median(stasks) if stasks else None,
               "rounds": rounds}
        records.append(rec)
        pred, (lo, hi), r1 = rec["predicted_s"], rec["interval_s"], rounds[0]
        inside = sum(1 for t in times if lo <= t <= hi)
        print(f"{name:<15} {ranks:>5} {pred*1e3:>8.2f} ms {m*1e3:>8.2f} ms {100*rel(pred, m):>+7.1f}% "
              f"{100*rec['round_spread']:>6.1f}% {100*rec['measured_relative_iqr']:>5.1f}% {100*rec['per_task_median_error']:>+8.1f}% "
              f"{lo*1e3:>7.2f} .. {hi*1e3:>6.2f} ms {inside:>2}/{a.rounds:<2} {rec['load'][0]:>4.1f}-{rec['load'][1]:<4.1f} "
              f"{r1['measured_s']*1e3:>8.2f} ms {100*rel(pred, r1['measured_s']):>+7.1f}%" +
              (f" {100*rec['state_error_median']:>+8.1f}%" if states else "") +
              (f" {100*rec['state_per_task_median_error']:>+9.1f}%" if stasks else ""), flush=True)
    summaries = {}
    for r in range(a.rounds):
        print(f"round {r + 1} alone (single runs, the pooled profile):")
        s = print_summary(per_round[r], "  ")
        summaries[f"round{r + 1}"] = dict(s, met=meets_targets(s), state_met=meets_targets(s["state"]))
    print(f"pooled over the {a.rounds} rounds (each configuration's median; per-task: the median over rounds):")
    s = print_summary(records, "  ", {x["config"]: (x["state_error_median"], x["state_per_task_median_error"])
                                      for x in records if x["state_error_median"] is not None})
    summaries["pooled"] = dict(s, met=meets_targets(s), state_met=meets_targets(s["state"]))
    met = sum(all(summaries[f"round{r + 1}"]["met"]) for r in range(a.rounds))
    print(f"  all four #13 targets: pooled {'yes' if all(summaries['pooled']['met']) else 'no'}; "
          f"single rounds {met} of {a.rounds}")
    smet = sum(all(summaries[f"round{r + 1}"]["state_met"]) for r in range(a.rounds))
    print(f"  all four #13 targets for the state probed now: pooled "
          f"{'yes' if all(summaries['pooled']['state_met']) else 'no'}; single rounds {smet} of {a.rounds}")
    matched = [x["state_ratios"].get("matched") for rec in records for x in rec["rounds"] if x["state_predicted_s"]]
    if matched:
        print(f"  state probes in a calibrated state: {sum(1 for m in matched if m)} of {len(matched)} single runs "
              f"(the others scaled from the nearest state)")
    print_coverage([x for rec in records for x in rec["rounds"]], "single runs (every round's)")
    return cal, ref, records, {"rounds": a.rounds, "seed": a.seed, "orders": [[item_label(i) for i in o] for o in orders],
                               "summaries": summaries}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--realtime", action="store_true", help="run the measurements under chrt -f 1")
    ap.add_argument("--rt-priority", type=int, default=1, help="the SCHED_FIFO priority of --realtime")
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                    help="rounds of every configuration, each in its own order (1: the single pass)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the seed of the rounds' order")
    ap.add_argument("--calibration-runs", type=int, default=None,
                    help="calibrate over this many runs (default 3 in one pass, one a round in rounds)")
    ap.add_argument("--no-state-probe", action="store_true", help="no prediction for the machine's state now")
    ap.add_argument("--calibration-probe", choices=["alone", "after"], default="alone",
                    help="the profile's state: probes taken alone before the calibration runs, or the runs' own")
    ap.add_argument("--shared-cores", action="store_true",
                    help="add configurations of 4 ranks, which share the cores of a machine with fewer (not with --realtime)")
    a = ap.parse_args()
    if a.shared_cores and a.realtime:
        ap.error("--shared-cores runs ranks that share cores, which time-share only under the default scheduler "
                 "(SCHED_FIFO runs a rank until it waits): run it without --realtime")
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if a.calibration_runs is None:
        a.calibration_runs = 3 if a.rounds == 1 else a.rounds
    a.calibration_runs = max(1, a.calibration_runs)
    if a.realtime:
        REALTIME[:] = ["chrt", "-f", str(a.rt_priority)]
    out = a.out or tempfile.mkdtemp(prefix="host-twin-")
    os.makedirs(out, exist_ok=True)
    cores = os.cpu_count() or 1
    only = set(a.only.split(",")) if a.only else None
    configs = []
    CORES[0] = cores
    for name, ranks, extra in CONFIGS + (SHARED_CONFIGS if a.shared_cores else []):
        if only and name not in only:
            continue
        if ranks > cores and (name, ranks, extra) not in SHARED_CONFIGS:
            print(f"{name:<15} skipped: {ranks} ranks > {cores} cores")
            continue
        configs.append((name, ranks, extra))
    started = time.time()
    cal, ref, records, rounds = (single_pass if a.rounds == 1 else in_rounds)(a, configs, out, cores)
    cal_runs = cal["runs"]
    with open(os.path.join(out, "rows.json"), "w") as f:
        json.dump(dict({"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)), "steps": a.steps,
                        "calibration_runs": a.calibration_runs, "realtime": a.realtime, "cores": cores,
                        "calibration_iteration_s": [c["iteration_time_s"] for c in cal_runs],
                        "calibration_relative_iqr": [c["steady_state"]["relative_iqr"] for c in cal_runs],
                        "calibration_state_probe": [c.get("state_probe") for c in cal_runs],
                        "calibration_state_probe_alone": [read_probe(f) for f in cal["probes"] if f],
                        "calibration_load": cal["loads"],
                        "calibration_probe": a.calibration_probe, "profile_state_probe": ref["profile"],
                        "wall_s": time.time() - started, "rows": records}, **rounds), f, indent=1)
    print(f"files in {out} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
