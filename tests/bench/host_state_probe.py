#!/usr/bin/env python3
"""Does the machine state probe follow the host's speed state? (issue 13, docs/exec.md "The machine's
state, probed"). Runs the calibration configuration of tests/bench/host_twin_error.py (tiny GPT, host
preset, TP=2, 4 micro-batches) N times; before each run `tandem run --probe-state` (the probe a
prediction would take), and each run's own probe (taken after its steps, JSON state_probe). Prints
per run the iteration time, the step IQR, both probes and the load, then the Spearman rank
correlation of the iteration time with each probe field, and the two states' medians when the runs
split into a fast and a slow group (iteration below / above the midpoint of min and max).

  tests/bench/host_state_probe.py [--bin build/bin] [--runs 12] [--steps 40] [--realtime] [--out DIR]
  tests/bench/host_state_probe.py --predict DIR --profile PROFILE [--bin build/bin]

--predict DIR: for every run of an earlier output DIR, the prediction of that run's configuration from
PROFILE (a host profile of the same configuration, made in either state), plain and scaled to the
probe taken before the run (`tandem sim --state-probe`), against the run's measured iteration time:
whether scaling to the probe helps when the state changed between the calibration and the run.

  tests/bench/host_state_probe.py --tracking DIR [DIR ...]

--tracking: over the rows of earlier tests/bench/host_twin_error.py runs (DIR/rows.json, the rows with
a probe; of a run in rounds, every round's run), how well the probe's ratio follows the measured move, for each way of taking the
calibration's probe: alone before each calibration run, and the runs' own after their steps (each
bench row holds its scaled prediction against both: state_predicted_s against the profile's,
state_other_reference_predicted_s against the other). Per row, y = measured / plain prediction (how
far the iteration moved from the calibration's state, as the plain model sees it) and x = scaled /
plain (the move the probe's ratio predicts). Prints Spearman(x, y) and the explained share
1 - sum ln(y / x)^2 / sum ln(y)^2: the share of the plain predictions' squared log error that the
scaling removes (1: all of it; 0: none; below 0: it adds error).
"""
import argparse, json, math, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "scenarios", "tiny-gpt.textproto")
SETS = ["--set", "cluster.preset=host", "--set", "cluster.gpus=2", "--set", "strategy.tp=2"]
FIELDS = ["allreduce_256b_s", "allreduce_16kib_s", "zero_fill_1mib_s", "compute_s"]


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + p.stderr.strip()[-800:])
    return p.stdout


def read_probe(path):
    out = {}
    for line in open(path):
        k, v = line.split("\t")
        out[k] = float(v)
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    for pos, i in enumerate(order):
        r[i] = float(pos)
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def predict(a):
    rows = json.load(open(os.path.join(a.predict, "rows.json")))
    sim = [os.path.join(a.bin, "tandem-sim"), TINY] + SETS + ["--calibration", a.profile, "--json"]
    plain = json.loads(sh(sim))["iteration_time_s"]
    errs, serrs = [], []
    print(f"profile {a.profile}: plain prediction {plain * 1e3:.2f} ms")
    print(f"{'run':>3} {'measured':>9} {'plain err':>9} {'state pred':>10} {'state err':>9} {'comm x':>6} {'mem x':>6} {'comp x':>6}")
    for i, r in enumerate(rows):
        j = json.loads(sh(sim + ["--state-probe", os.path.join(a.predict, f"probe{i}.txt")]))
        st, ratios = j["iteration_time_s"], j["prediction_interval"]["state_probe"]
        m = r["iteration_s"]
        errs.append((plain - m) / m)
        serrs.append((st - m) / m)
        print(f"{i + 1:>3} {m * 1e3:>6.2f} ms {100 * errs[-1]:>+8.1f}% {st * 1e3:>7.2f} ms {100 * serrs[-1]:>+8.1f}% "
              f"{ratios['communication_ratio']:>6.3f} {ratios['memory_ratio']:>6.3f} {ratios['compute_ratio']:>6.3f}")
    med = lambda v: statistics.median(abs(x) for x in v)
    print(f"median |error|: plain {100 * med(errs):.1f} %, scaled to the probe {100 * med(serrs):.1f} %; worst "
          f"{100 * max(abs(x) for x in errs):.1f} % / {100 * max(abs(x) for x in serrs):.1f} %")


def tracking(dirs):
    xs = {"alone": [], "after": []}
    ys = {"alone": [], "after": []}
    runs = 0
    for d in dirs:
        j = json.load(open(os.path.join(d, "rows.json")))
        own = j.get("calibration_probe")
        if own is None:
            print(f"{d}: written before the alone probe (no calibration_probe): skipped")
            continue
        runs += 1
        other = "after" if own == "alone" else "alone"
        # a run in rounds (host_twin_error.py --rounds R > 1): every round's run, each with its own probe
        for r in (x for row in j["rows"] for x in row.get("rounds", [row])):
            y = r["measured_s"] / r["predicted_s"]
            for src, key in ((own, "state_predicted_s"), (other, "state_other_reference_predicted_s")):
                if r.get(key):
                    xs[src].append(r[key] / r["predicted_s"])
                    ys[src].append(y)
    for src in ("alone", "after"):
        x, y = xs[src], ys[src]
        if len(x) < 3:
            print(f"calibration probe {src}: {len(x)} rows, too few")
            continue
        plain = sum(math.log(v) ** 2 for v in y)
        left = sum(math.log(v / u) ** 2 for u, v in zip(x, y))
        med = lambda v: 100 * statistics.median(abs(e) for e in v)
        print(f"calibration probe {src}: {len(x)} rows of {runs} runs; Spearman(probe's move, measured move) "
              f"{spearman(x, y):+.2f}; explained share {1 - left / plain:+.2f}; median |error| plain "
              f"{med([1 / v - 1 for v in y]):.1f} %, scaled {med([u / v - 1 for u, v in zip(x, y)]):.1f} %")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--realtime", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--predict", default="")
    ap.add_argument("--profile", default="")
    ap.add_argument("--tracking", nargs="+", default=[])
    a = ap.parse_args()
    if a.tracking:
        return tracking(a.tracking)
    if a.predict:
        return predict(a)
    rt = ["chrt", "-f", "1"] if a.realtime else []
    out = a.out or tempfile.mkdtemp(prefix="state-probe-")
    os.makedirs(out, exist_ok=True)
    rows = []
    print(f"{'run':>3} {'iter ms':>8} {'IQR':>6} | before: {'ar256 us':>8} {'ar16k us':>8} {'fill us':>8} {'comp us':>8} "
          f"| in run: {'ar256 us':>8} {'ar16k us':>8} {'fill us':>8} {'comp us':>8} {'load':>5}")
    for i in range(a.runs):
        pf = os.path.join(out, f"probe{i}.txt")
        sh(rt + [os.path.join(a.bin, "tandem-run"), "--probe-state", pf, "-n", "2"])
        before = read_probe(pf)
        j = json.loads(sh(rt + [os.path.join(a.bin, "tandem-run"), "-n", "2", TINY] + SETS + ["--steps", str(a.steps), "--json"]))
        inrun = j["state_probe"]
        row = {"iteration_s": j["iteration_time_s"], "relative_iqr": j["steady_state"]["relative_iqr"], "before": before,
               "in_run": inrun, "load": os.getloadavg()[0]}
        rows.append(row)
        print(f"{i + 1:>3} {row['iteration_s'] * 1e3:>8.2f} {100 * row['relative_iqr']:>5.1f}% | " +
              " ".join(f"{before[f] * 1e6:>8.2f}" for f in FIELDS) + " | " + " ".join(f"{inrun[f] * 1e6:>8.2f}" for f in FIELDS) +
              f" {row['load']:>5.1f}", flush=True)
    it = [r["iteration_s"] for r in rows]
    for src in ("before", "in_run"):
        print(f"Spearman(iteration, {src} probe): " +
              ", ".join(f"{f} {spearman(it, [r[src][f] for r in rows]):+.2f}" for f in FIELDS))
    mid = (min(it) + max(it)) / 2
    slow = [r for r in rows if r["iteration_s"] > mid]
    fast = [r for r in rows if r["iteration_s"] <= mid]
    if slow and fast:
        m = lambda rs, g: statistics.median(g(r) for r in rs)
        print(f"fast runs {len(fast)} (iteration median {m(fast, lambda r: r['iteration_s']) * 1e3:.2f} ms), "
              f"slow runs {len(slow)} ({m(slow, lambda r: r['iteration_s']) * 1e3:.2f} ms): slow / fast "
              f"{m(slow, lambda r: r['iteration_s']) / m(fast, lambda r: r['iteration_s']):.3f}")
        for src in ("before", "in_run"):
            print(f"  {src} probe, slow / fast medians: " +
                  ", ".join(f"{f} {m(slow, lambda r: r[src][f]) / m(fast, lambda r: r[src][f]):.3f}" for f in FIELDS))
    with open(os.path.join(out, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"files in {out}")


if __name__ == "__main__":
    sys.exit(main())
