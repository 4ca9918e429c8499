#!/usr/bin/env python3
"""Checks tests/bench/host_twin_rounds.py (the host twin bench's rounds, docs/exec.md "Session 16") on
cases whose answers are known by hand; no tandem needed, nothing timed.

    host_twin_rounds_test.py

- round_orders: every round holds every configuration once; calibration run k is in round k mod R
  (5 runs over 3 rounds: runs 1 and 4 in round 1, 2 and 5 in round 2, 3 in round 3; 3 runs in one
  round: all three there); the same seed gives the same orders; with the bench's eleven
  configurations, five rounds and one calibration run each, no two rounds share an order and no
  configuration holds the same place in every round (the point of the rounds); R < 1 is refused.
- pooled_time: the median, 10 ms of 9, 11, 10, 30, 10 ms (the 30 ms round moves it by one rank, not by
  its share: the mean is 14 ms); 10.5 ms of 9, 10, 11, 30 ms (the middle two's mean).
- round_spread: (11 - 9) / 10 = 0.2 of 9, 10, 11 ms; 0 for one round.
- target_summary and meets_targets: own -2 % -> 0.02; others +4, -6, +12 % -> median 0.06, worst
  0.12; per-task +1, -3, +8, nan % -> the median of 1, 3, 8 % = 0.03 (nan left out); targets
  (own 3 %, others' median 5 %, worst 10 %, per-task 5 %) -> met, not, not, met; exactly 3 / 5 /
  10 / 5 % meet them.
Exit 0 when all hold, 1 otherwise.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_twin_rounds import (CALIBRATION_RUN, meets_targets, pooled_time, round_orders,  # noqa: E402
                              round_spread, target_summary)

BENCH_CONFIGS = ["tp2", "tp2-8mb", "tp2-mb4", "dp2", "pp2-1f1b", "zero1-dp2", "zero2-dp2", "zero3-dp2", "tp2-sp",
                 "tp2-recompute", "1rank"]


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def near(name, got, want):
        check(got is not None and abs(got - want) < 1e-12, f"{name}: got {got!r}, want {want!r}")

    names = ["a", "b", "c", "d"]
    orders = round_orders(names, 5, 3, seed=7)
    check(len(orders) == 3, f"3 rounds: got {len(orders)}")
    for r, items in enumerate(orders):
        rows = sorted(n for n, k in items if n != CALIBRATION_RUN)
        cals = sorted(k for n, k in items if n == CALIBRATION_RUN)
        check(rows == names, f"round {r + 1} holds every configuration once: {rows}")
        check(cals == [[0, 3], [1, 4], [2]][r], f"round {r + 1}'s calibration runs: {cals}")
    check(orders == round_orders(names, 5, 3, seed=7), "the same seed gives the same orders")
    one = round_orders(names, 3, 1, seed=7)
    check(len(one) == 1 and sorted(k for n, k in one[0] if n == CALIBRATION_RUN) == [0, 1, 2],
          "one round holds all three calibration runs")

    bench = round_orders(BENCH_CONFIGS, 5, 5, seed=16)
    check(len({tuple(o) for o in bench}) == 5, "no two of the bench's five rounds share an order")
    for n in BENCH_CONFIGS:
        places = {[x[0] for x in o].index(n) for o in bench}
        check(len(places) > 1, f"{n} holds the same place in every round")
    try:
        round_orders(names, 1, 0, seed=1)
        check(False, "0 rounds accepted")
    except ValueError:
        pass

    near("pooled 5", pooled_time([0.009, 0.011, 0.010, 0.030, 0.010]), 0.010)
    near("pooled 4", pooled_time([0.009, 0.010, 0.011, 0.030]), 0.0105)
    near("spread", round_spread([0.009, 0.010, 0.011]), 0.2)
    near("spread of one", round_spread([0.010]), 0.0)

    s = target_summary({"own": -0.02, "x": 0.04, "y": -0.06, "z": 0.12},
                       {"own": 0.01, "x": -0.03, "y": 0.08, "z": float("nan")}, "own")
    near("own", s["own"], 0.02)
    near("others' median", s["others_median"], 0.06)
    near("others' worst", s["others_worst"], 0.12)
    near("per-task median", s["task_median"], 0.03)
    check(s["others"] == 3, f"three others: {s['others']}")
    check(meets_targets(s) == (True, False, False, True), f"targets: {meets_targets(s)}")
    edge = {"own": 0.03, "others_median": 0.05, "others_worst": 0.10, "task_median": 0.05}
    check(meets_targets(edge) == (True, True, True, True), "3 / 5 / 10 / 5 % meet the targets")
    check(not any(meets_targets({"own": None, "others_median": None, "others_worst": None, "task_median": None})),
          "no rows meet nothing")

    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
