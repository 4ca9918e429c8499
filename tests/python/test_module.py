"""The tandem Python module (python/tandem_module.cc): plan, sim and compare return the objects the
programs print with --json, take --set overrides as a list or a dict, and raise tandem.Error with
the programs' exit codes. usage: test_module.py BIN_DIR REPO_ROOT (PYTHONPATH=build/python)"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import tandem

BIN, ROOT = sys.argv[1], sys.argv[2]
TINY = os.path.join(ROOT, "scenarios", "tiny-gpt.textproto")
SETS = ["cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"]


def cli_json(program, *args):
    """What `tandem PROGRAM ARGS --json` prints, parsed (the reference the module must equal)."""
    out = subprocess.run([os.path.join(BIN, "tandem-" + program), *args, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def with_sets(sets):
    return [a for s in sets for a in ("--set", s)]


class Plan(unittest.TestCase):
    def test_same_object_as_the_cli(self):
        self.assertEqual(tandem.plan(TINY, SETS), cli_json("plan", TINY, *with_sets(SETS)))

    def test_numbers_by_hand(self):
        p = tandem.plan(TINY, {"cluster.gpus": 4, "strategy.tp": 2, "strategy.pp": 2})
        self.assertEqual(p["world_size"], 4)
        self.assertEqual(p["grid"], {"dp": 1, "pp": 2, "tp": 2, "sp": 1})
        # The tiny GPT (4 layers, hidden 64, vocab 256): per layer the QKV (64 x 192), output
        # (64 x 64) and MLP (64 x 256 twice) weights and two layernorms (gamma and beta of 64);
        # the tied embedding 256 x 64 and the final layernorm.
        layer = 64 * 192 + 64 * 64 + 2 * 64 * 256 + 2 * 2 * 64
        self.assertEqual(p["parameters"], 4 * layer + 256 * 64 + 2 * 64)

    def test_hf_config(self):
        # Llama 2 7B's published parameter count (tests/shared/hf_config_test.cc derives it).
        cfg = os.path.join(ROOT, "tests", "shared", "hf_configs", "llama-2-7b", "config.json")
        p = tandem.plan(os.path.join(ROOT, "scenarios", "gpt-6.7b-h200.textproto"), {"model.hf_config": cfg})
        self.assertEqual(p["parameters"], 6738415616)

    def test_errors_carry_the_exit_code(self):
        with self.assertRaises(tandem.Error) as e:
            tandem.plan(TINY, ["cluster.gpus=4", "strategy.tp=3"])
        self.assertEqual(e.exception.args[1], 2)
        self.assertIn("strategy.tp", e.exception.args[0])
        self.assertIsInstance(e.exception, ValueError)
        with self.assertRaises(tandem.Error) as e:
            tandem.plan(os.path.join(ROOT, "no-such.textproto"))
        self.assertEqual(e.exception.args[1], 2)
        self.assertIn("no-such.textproto", e.exception.args[0])
        with self.assertRaises(tandem.Error):
            tandem.plan(TINY, "strategy.tp=2")  # one string, not a list


class SimAndCompare(unittest.TestCase):
    def test_sim_and_compare_same_objects_as_the_cli(self):
        sets = ["cluster.gpus=2", "strategy.tp=2"]
        s = tandem.sim(TINY, sets)
        self.assertEqual(s, cli_json("sim", TINY, *with_sets(sets)))
        self.assertFalse(s["oom"])
        # Twice in one process: each simulation runs in a forked child (SimGrid runs once a process).
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.trace"), os.path.join(d, "b.trace")
            tandem.sim(TINY, sets, trace=a)
            tandem.sim(TINY, sets + ["strategy.global_batch=16"], trace=b)
            c = tandem.compare(a, b, allow_different_scenarios=True)
            self.assertEqual(c, cli_json("compare", a, b, "--allow-different-scenarios"))
            with self.assertRaises(tandem.Error) as e:
                tandem.compare(a, b)  # different scenario digests
            self.assertEqual(e.exception.args[1], 2)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
