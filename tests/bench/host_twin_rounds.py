"""The host twin bench's rounds (tests/bench/host_twin_error.py --rounds R; docs/exec.md "Session 16: the
bench in rounds"): the order the runs are made in, and what a configuration's rounds pool to.

This VM's speed drifts by 10-20 % over tens of seconds even when nothing else runs, so one run of a
configuration is one sample of a moving machine, and a bench that runs every configuration once in
a fixed order puts the drift on blocks of consecutive rows, always the same ones. In rounds, every
round runs every configuration once (and its share of the calibration runs), each round in its own
order, so that the drift falls on every configuration alike and the calibration samples the same
stretch of time as the rows.

No tandem needed here: tests/bench/host_twin_rounds_test.py checks it by hand.
"""
import random
import statistics

CALIBRATION_RUN = "calibration"


def round_orders(names, calibration_runs, rounds, seed):
    """The runs of each round, in the order they are made: a list of `rounds` lists of items, an item
    (name, None) for a run of configuration `name`, or (CALIBRATION_RUN, k) for calibration run k
    (0-based). Calibration run k goes to round k % rounds, so that R runs over R rounds are one a
    round. Every round holds each name once and is shuffled by one random.Random(seed), the rounds
    in turn: the same seed gives the same orders."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    rng = random.Random(seed)
    orders = []
    for r in range(rounds):
        items = [(CALIBRATION_RUN, k) for k in range(calibration_runs) if k % rounds == r]
        items += [(n, None) for n in names]
        rng.shuffle(items)
        orders.append(items)
    return orders


def item_label(item):
    name, k = item
    return f"{name}{k + 1}" if name == CALIBRATION_RUN else name


def pooled_time(times):
    """A configuration's measured time over its rounds: the median (statistics.median: the mean of the
    middle two for an even count). The median, not the mean: a round that caught the machine in a
    slow moment moves it by one rank, not by its share of the slowness."""
    return statistics.median(times)


def round_spread(times):
    """The run-to-run spread of one configuration over the rounds: (max - min) / median."""
    return (max(times) - min(times)) / statistics.median(times) if len(times) > 1 else 0.0


def target_summary(errors, task_errors, own_name):
    """The #13 targets' numbers over one set of rows: errors {config: signed iteration error},
    task_errors {config: signed per-task median error, nan where none}. Returns own (|error| of
    own_name or None), others (|error| of the rest), others_median, others_worst, task_median
    (the median over configurations of |per-task median error|; None where a list is empty)."""
    others = [abs(e) for n, e in errors.items() if n != own_name]
    tasks = [abs(t) for t in task_errors.values() if t == t]
    return {"own": abs(errors[own_name]) if own_name in errors else None,
            "others_median": statistics.median(others) if others else None,
            "others_worst": max(others) if others else None,
            "others": len(others),
            "task_median": statistics.median(tasks) if tasks else None}


def meets_targets(s):
    """The four #13 targets: own <= 3 %, others' median <= 5 % and worst <= 10 %, per-task median <= 5 %."""
    return (s["own"] is not None and s["own"] <= 0.03, s["others_median"] is not None and s["others_median"] <= 0.05,
            s["others_worst"] is not None and s["others_worst"] <= 0.10,
            s["task_median"] is not None and s["task_median"] <= 0.05)
