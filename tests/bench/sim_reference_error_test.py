#!/usr/bin/env python3
"""Checks compute_factor() of tests/bench/sim_reference_error.py (the diagnostic k of
docs/accuracy.md sections 10 and 16) on rows whose numbers are chosen so the answer is known by hand.

    sim_reference_error_test.py

Row 1: measured 1.5 s, predicted 1.0 s, busy gemm 0.4 + attention 0.2 + vector 0.1 + optimizer 0.05
+ host 0.05 = 0.8 s of compute (nvlink 0.3 s and nic 0.1 s are communication and do not count):
share 0.8 / 1.0 = 0.8, k = 1 + (1.5 - 1.0) / 0.8 = 1.625.
Row 2: a measurement faster than the prediction: measured 0.9 s, predicted 1.2 s, gemm 0.6 s only
(the other compute components absent from the row, as in rows saved before they existed):
share 0.5, k = 1 + (0.9 - 1.2) / 0.6 = 0.5.
Row 3: no compute at all: k is undefined (nan), busy and share 0.
Exit 0 when all hold, 1 otherwise.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_reference_error as sre  # noqa: E402


def main():
    failures = []

    def near(name, got, want):
        if abs(got - want) > 1e-12:
            failures.append(f"{name}: got {got!r}, want {want!r}")

    busy, share, k = sre.compute_factor({
        "measured_s": 1.5, "predicted_s": 1.0,
        "busy_s": {"gemm": 0.4, "attention": 0.2, "vector": 0.1, "optimizer": 0.05, "host": 0.05,
                   "nvlink": 0.3, "nic": 0.1, "p2p": 0.0, "pcie": 0.0}})
    near("row 1 busy", busy, 0.8)
    near("row 1 share", share, 0.8)
    near("row 1 k", k, 1.625)

    busy, share, k = sre.compute_factor({"measured_s": 0.9, "predicted_s": 1.2, "busy_s": {"gemm": 0.6}})
    near("row 2 busy", busy, 0.6)
    near("row 2 share", share, 0.5)
    near("row 2 k", k, 0.5)

    busy, share, k = sre.compute_factor({"measured_s": 1.0, "predicted_s": 1.0, "busy_s": {"nvlink": 1.0}})
    near("row 3 busy", busy, 0.0)
    near("row 3 share", share, 0.0)
    if not math.isnan(k):
        failures.append(f"row 3 k: got {k!r}, want nan")

    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
