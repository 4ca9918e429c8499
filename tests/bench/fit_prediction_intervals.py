#!/usr/bin/env python3
"""Fits the residuals of each cost component of `tandem sim` on the reference data and writes
sim/data/component_residuals.tsv, which the simulator compiles in for its prediction intervals
(sim/prediction_interval.h, docs/sim.md "Prediction intervals"). Rerun it whenever the cost model
changes, then rebuild:

  tests/bench/sim_reference_error.py --max-gpus 384 --save /tmp/rows.json
  tests/bench/fit_prediction_intervals.py --rows /tmp/rows.json [--sim-test build/bin/sim_test]

Residual = measured / tandem, one value per reference row; each component keeps the 10th, 50th and
90th percentiles of its residuals (linear interpolation between order statistics).
  nvlink  all-reduce on one 8-GPU node, A100 and H200 (nccl_allreduce_8x*.tsv), printed by
          sim_test --gtest_filter=NcclReference.* as "residual" lines;
  nic     multi-node all-reduce bus bandwidth, DGX A100 and DGX H100 (nccl_busbw_fabrics.tsv), same;
  pcie    H2D and D2H copies on H200 (nccl_allreduce_8xh200.tsv header), same;
  p2p     no p2p reference in the repository: a pipeline message crosses NVLink or a NIC, so the
          nvlink and nic rows together stand in for it;
  gemm, attention, vector, optimizer, host
          the reference iteration rows (korthikanti2022_table5.tsv, megatron_core_h100_weak_scaling.tsv)
          after the network part is accounted: for a row of measured M, predicted T and busy shares
          s_c of the slowest rank, the compute residual is
              (M / T - sum_{c network} s_c q50_c) / sum_{c compute} s_c.
          The rows cannot tell the compute kinds apart (one equation per row), so all kinds share
          one fit and one group: they err together.
Groups: components of one group err together (fit on the same rows), groups independently; the
combination rule is combine() below, the same as sim/prediction_interval.cc.
"""
import argparse, datetime, json, math, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "sim", "data", "component_residuals.tsv")
COMPONENTS = ["gemm", "attention", "vector", "optimizer", "host", "nvlink", "nic", "p2p", "pcie"]
COMPUTE = ["gemm", "attention", "vector", "optimizer", "host"]
NETWORK = ["nvlink", "nic", "p2p", "pcie"]
COVERAGE = 0.80  # sim/prediction_interval.h kIntervalCoverage: the q10..q90 band


def quantile(values, p):
    v = sorted(values)
    if not v:
        raise ValueError("no values")
    x = p * (len(v) - 1)
    i = int(math.floor(x))
    if i + 1 >= len(v):
        return v[-1]
    return v[i] + (x - i) * (v[i + 1] - v[i])


def summary(values, group, source):
    return {"group": group, "rows": len(values), "q10": quantile(values, 0.1), "q50": quantile(values, 0.5),
            "q90": quantile(values, 0.9), "source": source}


def combine(t, busy, table):
    """The interval [low, high] of prediction t (sim/prediction_interval.cc prediction_interval)."""
    total = sum(max(0.0, busy.get(c, 0.0)) for c in COMPONENTS)
    if not (total > 0 and t > 0):
        return t, t
    centre, groups = 0.0, {}
    for c in COMPONENTS:
        s = max(0.0, busy.get(c, 0.0)) / total
        if s == 0:
            continue
        r = table[c]
        centre += s * r["q50"]
        g = groups.setdefault(r["group"], [0.0, 0.0])
        g[0] += s * (r["q50"] - r["q10"])
        g[1] += s * (r["q90"] - r["q50"])
    lo = t * (centre - math.sqrt(sum(g[0] ** 2 for g in groups.values())))
    hi = t * (centre + math.sqrt(sum(g[1] ** 2 for g in groups.values())))
    return max(0.0, min(lo, t)), max(hi, t)


def network_residuals(sim_test):
    """{component: [(source, what, measured_s, tandem_s)]} from sim_test's "residual" lines."""
    p = subprocess.run([sim_test, "--gtest_filter=NcclReference.*"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{sim_test} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    out = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if len(f) == 6 and f[0] == "residual":
            out.setdefault(f[1], []).append((f[2], f[3], float(f[4]), float(f[5])))
    for c in ("nvlink", "nic", "pcie"):
        if c not in out:
            raise RuntimeError(f"{sim_test} printed no residual line for {c}")
    return out


def network_table(net):
    def ratios(c):
        return [m / t for _, _, m, t in net[c]]

    def files(c):
        return ", ".join(sorted({s for s, _, _, _ in net[c]}))

    table = {c: summary(ratios(c), c, f"{files(c)} via sim_test --gtest_filter=NcclReference.*")
             for c in ("nvlink", "nic", "pcie")}
    table["p2p"] = summary(ratios("nvlink") + ratios("nic"), "p2p",
                           "no p2p reference: the nvlink and nic rows together (a pipeline message crosses either)")
    return table


def compute_residual(row, table):
    """The compute residual of one iteration row, the network part taken at its median; None when
    the row has no compute."""
    busy = row["busy_s"]
    total = sum(busy.get(c, 0.0) for c in COMPONENTS)
    comp = sum(busy.get(c, 0.0) for c in COMPUTE) / total if total > 0 else 0
    if comp <= 0:
        return None
    net = sum(busy.get(c, 0.0) / total * table[c]["q50"] for c in NETWORK)
    return (row["measured_s"] / row["predicted_s"] - net) / comp


def fit(net_tab, rows, leave_out=None):
    """The full table: network from net_tab, compute from the iteration rows (but `leave_out`)."""
    table = dict(net_tab)
    use = [r for i, r in enumerate(rows) if i != leave_out]
    res = [x for x in (compute_residual(r, net_tab) for r in use) if x is not None]
    files = "korthikanti2022_table5.tsv, megatron_core_h100_weak_scaling.tsv, nemo_24.07_h100_fp8.tsv"
    for c in COMPUTE:
        table[c] = summary(res, "compute", f"{len(res)} iteration rows of {files} after the network part "
                                           "(kinds not separable: one fit, one group)")
    return table


def write_table(table, path, rows_file, nrows):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(path, "w") as f:
        f.write("# Residuals (measured / tandem) of each cost component on the reference data: their 10th, 50th and\n"
                "# 90th percentiles. Written by tests/bench/fit_prediction_intervals.py; do not edit by hand.\n"
                f"# Fit {date} at commit {commit}{' (with uncommitted changes)' if dirty else ''}, "
                f"{nrows} iteration rows from {os.path.basename(rows_file)} (sim_reference_error.py --save).\n"
                "# Components of one group err together; groups are independent (sim/prediction_interval.h).\n")
        f.write("component\tgroup\trows\tq10\tq50\tq90\tsource\n")
        for c in COMPONENTS:
            r = table[c]
            f.write(f"{c}\t{r['group']}\t{r['rows']}\t{r['q10']:.4f}\t{r['q50']:.4f}\t{r['q90']:.4f}\t{r['source']}\n")


def read_table(path):
    """{component: {group, rows, q10, q50, q90, source}} from a residual file."""
    table, header = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if header is None:
                header = cols
                continue
            d = dict(zip(header, cols))
            table[d["component"]] = {"group": d["group"], "rows": int(d["rows"]), "q10": float(d["q10"]),
                                     "q50": float(d["q50"]), "q90": float(d["q90"]), "source": d["source"]}
    return table


def load_rows(path):
    with open(path) as f:
        rows = json.load(f)
    return [r for r in rows if r.get("predicted_s")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True, help="the rows saved by sim_reference_error.py --save")
    ap.add_argument("--sim-test", default=os.path.join(ROOT, "build", "bin", "sim_test"))
    ap.add_argument("-o", "--output", default=OUT)
    a = ap.parse_args()
    rows = load_rows(a.rows)
    net = network_table(network_residuals(a.sim_test))
    table = fit(net, rows)
    write_table(table, a.output, a.rows, len(rows))
    for c in COMPONENTS:
        r = table[c]
        print(f"{c:10s} {r['group']:8s} {r['rows']:3d} rows  q10 {r['q10']:.3f}  q50 {r['q50']:.3f}  q90 {r['q90']:.3f}")
    print(f"wrote {os.path.relpath(a.output, ROOT)}; rebuild to compile it in")


if __name__ == "__main__":
    sys.exit(main())
