#!/usr/bin/env python3
"""Prediction error of `tandem sim` on the public reference data (traces/reference/, copied from
../shared/reference/ with their source lines). No per-row tuning: every row runs with the same
model settings; the table and the median / worst errors go to stdout (recorded in docs/sim.md).
Each set runs with the software preset of the framework that produced it (docs/software.md):
Korthikanti et al. 2022 with megatron-lm-2022, the Megatron-Core table with megatron-core-0.8
plus the overlap flags its source says were on.

Each row also shows the prediction interval tandem printed (`iteration_time_interval_s`, in the
row's unit) and whether the measurement falls inside it; then the interval's coverage on the rows,
in-sample (the residual table compiled in, fit on these rows) and leave-one-out (each row's
interval from residuals fit without it: fit_prediction_intervals.py, with the network residuals
from --sim-test). --save FILE keeps the rows for fit_prediction_intervals.py --rows; --rows FILE
prints the table again from saved rows without simulating, the in-sample intervals then computed
from sim/data/component_residuals.tsv by the same rule (fit_prediction_intervals.combine) — what
the simulator prints once rebuilt with that table. A second table gives each row's compute busy time
(slowest rank), its share of the predicted iteration and the compute factor k of docs/accuracy.md
sections 10 and 16 (a diagnostic: nothing is changed with it).

  tests/bench/sim_reference_error.py [--bin build/bin/tandem-sim] [--only korthikanti|megatron|nemo]
      [--max-gpus N] [--save rows.json | --rows rows.json] [--sim-test build/bin/sim_test]
"""
import argparse, json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_prediction_intervals as fpi  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF = os.path.join(ROOT, "traces", "reference")
BASE = os.path.join(ROOT, "scenarios", "gpt3-175b-a100.textproto")


def rows(name):
    with open(os.path.join(REF, name)) as f:
        lines = [l.rstrip("\n") for l in f if not l.startswith("#") and l.strip()]
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def run(binary, sets, timeout):
    cmd = [binary, BASE, "--json"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0, 3):
        raise RuntimeError(p.stderr.strip())
    return json.loads(p.stdout), time.time() - t0


def korthikanti(binary, timeout):
    out = []
    for r in rows("korthikanti2022_table5.tsv"):
        v = int(r["virtual_stages"])
        common = [f"model.name={r['name']}", f"model.layers={r['layers']}", f"model.hidden={r['hidden']}",
                  f"model.heads={r['heads']}", f"model.ffn_hidden={r['ffn']}", "model.vocab=51200",
                  "model.seq_len=2048", f"cluster.gpus={r['gpus']}", f"strategy.tp={r['tp']}",
                  f"strategy.pp={r['pp']}", "strategy.dp=1", f"strategy.global_batch={r['global_batch']}",
                  f"strategy.micro_batch={r['micro_batch']}", "strategy.dtype=fp16",
                  f"strategy.virtual_stages={v}",
                  f"strategy.pp_schedule={'interleaved' if v > 1 else '1f1b'}",
                  # Megatron-LM v3.0, the release of the paper (selective recompute, sequence parallelism).
                  "software.preset=megatron-lm-2022"]
        for mode, col, extra in (("full", "iter_time_full_s", ["strategy.recompute=full"]),
                                 ("seqsel", "iter_time_seqsel_s",
                                  ["strategy.recompute=selective", "strategy.sp_mode=megatron"])):
            label = f"korthikanti {r['name']} {mode}"
            try:
                j, wall = run(binary, common + extra, timeout)
                out.append((label, float(r[col]), j["iteration_time_s"], "s", wall, j))
            except Exception as e:  # report and go on: one failing row must not hide the others
                out.append((label, float(r[col]), None, str(e)[:200], 0, None))
    return out


def megatron(binary, timeout, max_gpus):
    out = []
    for r in rows("megatron_core_h100_weak_scaling.tsv"):
        if int(r["gpus"]) > max_gpus:
            out.append((f"megatron-core {r['name']}", float(r["tflops_per_gpu"]), None,
                        f"skipped: {r['gpus']} GPUs > --max-gpus", 0, None))
            continue
        sets = [f"model.name={r['name']}", f"model.layers={r['layers']}", f"model.hidden={r['hidden']}",
                f"model.heads={r['heads']}", "model.ffn_hidden=0", "model.vocab=131072", "model.seq_len=4096",
                "model.dropout=0", "cluster.preset=dgx-h100", f"cluster.gpus={r['gpus']}",
                f"strategy.tp={r['tp']}", f"strategy.pp={r['pp']}", f"strategy.dp={r['dp']}",
                f"strategy.global_batch={r['global_batch']}", "strategy.micro_batch=1", "strategy.dtype=bf16",
                "strategy.recompute=none", "strategy.flash_attention=true", "strategy.zero_stage=1",
                f"strategy.sp_mode={'megatron' if int(r['tp']) > 1 else 'none'}",
                "software.preset=megatron-core-0.8",
                # The source says "DP/TP/PP overlap on": --overlap-grad-reduce, --overlap-param-gather,
                # --tp-comm-overlap (which needs sequence parallelism, so tp > 1).
                "software.grad_reduce_overlap=true", "software.overlap_param_gather=true",
                f"software.tp_comm_overlap={'true' if int(r['tp']) > 1 else 'false'}",
                # Megatron-Core's DDP bucket: max(40M, 1M * dp) parameters (distributed_data_parallel.py).
                f"strategy.bucket_mb={max(40e6, 1e6 * int(r['dp'])) * 2 / 2**20:.1f}"]
        label = f"megatron-core {r['name']} (TFLOP/s/GPU)"
        try:
            j, wall = run(binary, sets, timeout)
            out.append((label, float(r["tflops_per_gpu"]), j["model_tflops_per_gpu"], "TFLOP/s", wall, j))
        except Exception as e:
            out.append((label, float(r["tflops_per_gpu"]), None, str(e)[:200], 0, None))
    return out


def replay(path):
    """The rows of an earlier --save, as (res, rows); in-sample intervals from the residual file."""
    with open(path) as f:
        saved = json.load(f)
    table = fpi.read_table(fpi.OUT)
    ref_tflops = {f"megatron-core {r['name']} (TFLOP/s/GPU)": float(r["tflops_per_gpu"])
                  for r in rows("megatron_core_h100_weak_scaling.tsv")}
    res = []
    for r in saved:
        if "ref" not in r:  # saved before the ref/pred columns: from the reference file
            r["ref"] = r["measured_s"] if r["unit"] == "s" else ref_tflops[r["label"]]
            r["pred"] = r["predicted_s"] if r["unit"] == "s" else r["ref"] * r["measured_s"] / r["predicted_s"]
            r["wall"] = 0.0
        r["interval_s"] = list(fpi.combine(r["predicted_s"], r["busy_s"], table))
        res.append((r["label"], r["ref"], r["pred"], r["unit"], r["wall"],
                    {"iteration_time_s": r["predicted_s"], "iteration_time_interval_s": r["interval_s"]}))
    return res, saved


# The published shapes of the NeMo 24.07 FP8 rows' model families, from NVIDIA/NeMo @
# 8e3d65dcfe3504689bfc5b6e67d502780aacad41 (the commit of the performance summary the rows come from),
# nemo/collections/llm/gpt/model/: base.py GPTConfig5B/20B/175B (LayerNorm, GeLU, tied embeddings,
# Megatron-Core TransformerConfig's dropout 0.1), llama.py Llama2Config7B/13B/70B (RMSNorm, SwiGLU,
# untied, dropout 0) and nemotron.py Nemotron3Config8B, Nemotron4Config22B/340B (LayerNorm with
# zero-centred gamma, squared ReLU, untied, dropout 0). Vocabularies: the GPT-2 BPE (50257), the
# Llama 2 SentencePiece (32000), Nemotron's 256000, each padded by NeMo's get_vocab_size to a multiple
# of make_vocab_size_divisible_by (128) * tp. Squared ReLU is not a gated unit: it runs the two
# GEMMs of a GeLU MLP, so it is given to tandem as gelu (the element-wise kernel differs).
# (layers, hidden, heads, kv_heads, ffn, tokenizer vocab, activation, norm, tied, dropout)
NEMO_MODELS = {
    "GPT3-5B": (24, 4096, 32, 32, 16384, 50257, "gelu", "layernorm", True, 0.1),
    "GPT3-20B": (44, 6144, 48, 48, 24576, 50257, "gelu", "layernorm", True, 0.1),
    "GPT3-175B": (96, 12288, 96, 96, 49152, 50257, "gelu", "layernorm", True, 0.1),
    "LLAMA2-7B": (32, 4096, 32, 32, 11008, 32000, "swiglu", "rmsnorm", False, 0.0),
    "LLAMA2-13B": (40, 5120, 40, 40, 13824, 32000, "swiglu", "rmsnorm", False, 0.0),
    "LLAMA2-70B": (80, 8192, 64, 8, 28672, 32000, "swiglu", "rmsnorm", False, 0.0),
    "Nemotron-8B": (32, 4096, 32, 32, 16384, 256000, "gelu", "layernorm", False, 0.0),
    "Nemotron-22B": (40, 6144, 48, 48, 24576, 256000, "gelu", "layernorm", False, 0.0),
    "Nemotron-340B": (96, 18432, 96, 8, 73728, 256000, "gelu", "layernorm", False, 0.0),
    # llama.py Llama3Config8B/70B (GQA with 8 query groups, RMSNorm, SwiGLU, untied, dropout 0); the
    # Llama 3 tokenizer's 128256 entries.
    "LLAMA3-8B": (32, 4096, 32, 8, 14336, 128256, "swiglu", "rmsnorm", False, 0.0),
    "LLAMA3-70B": (80, 8192, 64, 8, 28672, 128256, "swiglu", "rmsnorm", False, 0.0),
}


# The rows whose launcher configuration keeps the optimizer state in bf16 (optim.dtype: bf16):
# NVIDIA/NeMo-Framework-Launcher tag 24.07 (8325688d8345a5513660f0f8390f0482a721c009)
# launcher_scripts/conf/training/nemotron/nemotron_340b.yaml:158-163; every other row's base file
# leaves it at the fp32 default.
NEMO_BF16_OPTIMIZER = {"Nemotron-340B"}

# The rows whose launcher configuration turns Transformer Engine's userbuffers TP overlap off. The
# published table (NVIDIA/NeMo docs/source/performance/performance_summary.md at 8e3d65dc) states the
# container (NeMo 24.07), the system (DGX-H100), FP8 and the parallel sizes, nothing about the TP
# overlap; the launcher's base files at tag 24.07 (NVIDIA/NeMo-Framework-Launcher@8325688d8345a5513660f0f8390f0482a721c009,
# launcher_scripts/conf/training/) are the only evidence: ub_tp_comm_overlap False in gpt3/175b.yaml:149
# (tp 4, the table's) and gpt3/175b_fp8.yaml:149, and in nemotron/nemotron_340b.yaml:156; True in
# gpt3/20b.yaml:149, llama/llama2_70b.yaml:136, llama/llama3_70b.yaml:136, nemotron/nemotron_8b.yaml:158
# and nemotron/nemotron_22b.yaml:158 (the tp 1 rows have nothing to overlap).
NEMO_TP_OVERLAP_OFF = {"GPT3-175B", "Nemotron-340B"}

# The interleaved rows whose launcher configuration batches the pipeline exchange instead of
# overlapping it: overlap_p2p_comm False, batch_p2p_comm True in nemotron/nemotron_340b.yaml:135-136
# (NeMo-Framework-Launcher@8325688d8345a5513660f0f8390f0482a721c009); True / False in gpt3/175b.yaml:108-109,
# gpt3/175b_fp8.yaml:159-160, llama/llama2_13b.yaml:137-138, llama/llama2_70b.yaml:140-141,
# llama/llama3_70b.yaml:138-139, nemotron/nemotron_22b.yaml:138-139 (the preset's value). NeMo passes
# them to Megatron-Core's ModelParallelConfig (megatron_base_model.py:1133-1136 at 8e3d65dc).
NEMO_P2P_BATCHED = {"Nemotron-340B"}


def nemo_sets(r):
    """The --set overrides of one NeMo row (a dict of the file's columns)."""
    layers, hidden, heads, kv, ffn, vocab, act, norm, tied, dropout = NEMO_MODELS[r["model"]]
    tp, pp, vp, cp = int(r["tp"]), int(r["pp"]), int(r["vp"]), int(r["cp"])
    pad = 128 * tp
    # Context parallelism (cp > 1): Megatron-Core's, through Transformer Engine's ring of K/V blocks
    # over a load-balanced (zig-zag) split of the sequence: tandem's sp_mode ring_attention over an
    # sp axis of size cp. That mode excludes Megatron sequence parallelism over the tensor group
    # (NeMo runs both: sequence_parallel True with cp), so such a row's tensor-parallel layers run
    # with all-reduces and without the TP communication overlap: same volume, not overlapped.
    sp_mode = "ring_attention" if cp > 1 else ("megatron" if tp > 1 else "none")
    return [f"model.name={r['model']}", f"model.layers={layers}", f"model.hidden={hidden}",
            f"model.heads={heads}", f"model.kv_heads={kv}", f"model.ffn_hidden={ffn}",
            f"model.vocab={(vocab + pad - 1) // pad * pad}", f"model.seq_len={r['seq']}",
            f"model.activation={act}", f"model.norm={norm}", f"model.tied_embeddings={'true' if tied else 'false'}",
            f"model.dropout={dropout}", "cluster.preset=dgx-h100", f"cluster.gpus={r['gpus']}",
            f"strategy.tp={tp}", f"strategy.pp={pp}", "strategy.dp=0",
            f"strategy.global_batch={r['global_batch']}", f"strategy.micro_batch={r['micro_batch']}",
            "strategy.dtype=fp8", "strategy.recompute=none", "strategy.flash_attention=true",
            "strategy.zero_stage=1", f"strategy.virtual_stages={vp}",
            f"strategy.pp_schedule={'interleaved' if vp > 1 else '1f1b'}",
            f"strategy.sp={cp}", f"strategy.sp_mode={sp_mode}",
            "software.preset=megatron-core-0.8",
            f"software.tp_comm_overlap={'true' if sp_mode == 'megatron' and r['model'] not in NEMO_TP_OVERLAP_OFF else 'false'}",
            "software.overlap_param_gather=true",
            f"software.overlap_p2p_comm={'false' if r['model'] in NEMO_P2P_BATCHED else 'true'}",
            # Apex's DistributedFusedAdam under NeMo buckets every pipeline stage (one bucket per
            # Transformer layer, or per virtual stage with vp: NVIDIA/NeMo@8e3d65dcfe3504689bfc5b6e67d502780aacad41
            # nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py:642-658), not
            # Megatron-Core DDP's first-stage-only bucketing (the preset's bucket_every_stage false).
            "software.bucket_every_stage=true",
            # NeMo 24.07 trains with optim.name distributed_fused_adam (NeMo's MegatronDistributedFusedAdam
            # over Apex's DistributedFusedAdam), overlap_grad_sync True, and in its FP8 configuration
            # grad_sync_dtype bf16: NVIDIA/NeMo-Framework-Launcher tag 24.07 (8325688d8345a5513660f0f8390f0482a721c009)
            # launcher_scripts/conf/training/gpt3/175b_fp8.yaml:171-177 (and nemotron/nemotron_340b.yaml:158-163).
            # Apex (NVIDIA/apex@23c1f86520e22b505e8fdfcf6298273dff2d93d8) allocates its contiguous gradient
            # buffer unsharded in grad_sync_dtype (distributed_fused_adam.py:1099-1124): 2 bytes a parameter.
            "software.grad_reduce_dtype=param", "software.grad_reduce_overlap=true",
            # Apex's step writes the 16-bit parameters itself (no separate master copy pass), and what it
            # keeps beside them NeMo derives from the optimizer dtype (NVIDIA/NeMo@8e3d65dcfe3504689bfc5b6e67d502780aacad41
            # nemo/collections/nlp/models/language_modeling/megatron_base_model.py:803-812): the default fp32
            # (optim.dtype unset) over bf16 params gives store_params False, store_param_remainders True (int16
            # remainders, apex distributed_fused_adam.py:458-464); an optimizer dtype equal to the model's
            # gives store_params False (no master). Nemotron-340B's block sets dtype bf16
            # (nemotron/nemotron_340b.yaml:162): bf16 moments, no master.
            "software.separate_master_copy=false"] + (
                ["software.optimizer_state_dtype=param", "software.master_params=none"]
                if r["model"] in NEMO_BF16_OPTIMIZER else ["software.master_params=remainder"])


def nemo(binary, timeout, max_gpus):
    out = []
    for r in rows("nemo_24.07_h100_fp8.tsv"):
        label = f"nemo {r['model']} {r['gpus']} GPUs (TFLOP/s/GPU)"
        ref = float(r["model_tflops_per_gpu"])
        if int(r["gpus"]) > max_gpus:
            out.append((label, ref, None, f"skipped: {r['gpus']} GPUs > --max-gpus", 0, None))
            continue
        sets = nemo_sets(r)
        try:
            j, wall = run(binary, sets, timeout)
            if j.get("oom"):  # no iteration time: not a prediction error, say so
                out.append((label, ref, None, f"out of memory in the simulation ({wall:.0f} s)", 0, None))
            else:
                out.append((label, ref, j["model_tflops_per_gpu"], "TFLOP/s", wall, j))
        except Exception as e:
            out.append((label, ref, None, str(e)[:200], 0, None))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "tandem-sim"))
    ap.add_argument("--only", choices=["korthikanti", "megatron", "nemo"])
    ap.add_argument("--max-gpus", type=int, default=8192)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--save", help="write the rows (times, busy time by component) as JSON here")
    ap.add_argument("--rows", help="print the table from rows saved by --save instead of simulating")
    ap.add_argument("--sim-test", default=os.path.join(ROOT, "build", "bin", "sim_test"),
                    help="the sim_test binary: its network residuals for the leave-one-out intervals")
    a = ap.parse_args()
    if a.rows:
        res, rows = replay(a.rows)
    else:
        res = []
        if a.only in (None, "korthikanti"):
            res += korthikanti(a.bin, a.timeout)
        if a.only in (None, "megatron"):
            res += megatron(a.bin, a.timeout, a.max_gpus)
        if a.only in (None, "nemo"):
            res += nemo(a.bin, a.timeout, a.max_gpus)
        # Every row as times: a TFLOP/s row's measured time is the predicted time * predicted / measured.
        rows = []
        for label, ref, pred, unit, wall, j in res:
            if pred is None:
                continue
            t = j["iteration_time_s"]
            measured = ref if unit == "s" else t * pred / ref
            rows.append({"label": label, "unit": unit, "ref": ref, "pred": pred, "wall": wall, "measured_s": measured,
                         "predicted_s": t, "interval_s": j["iteration_time_interval_s"],
                         "busy_s": j["prediction_interval"]["busy_s"]})
    if a.save:
        with open(a.save, "w") as f:
            json.dump(rows, f, indent=1)
    loo = [None] * len(rows)
    try:
        net = fpi.network_table(fpi.network_residuals(a.sim_test))
        for i, r in enumerate(rows):
            loo[i] = fpi.combine(r["predicted_s"], r["busy_s"], fpi.fit(net, rows, leave_out=i))
    except Exception as e:  # the table still prints; say why the leave-one-out column is empty
        print(f"(no leave-one-out intervals: {str(e)[:300]})")

    def in_unit(r, lo_hi):  # an interval of times in the row's unit (TFLOP/s: inverted)
        lo, hi = lo_hi
        if r["unit"] == "s":
            return lo, hi
        k = r["measured_s"] * float(next(x[1] for x in res if x[0] == r["label"]))
        return k / hi, k / lo

    def inside(r, lo_hi):
        return lo_hi[0] <= r["measured_s"] <= lo_hi[1]

    errs, by_label = [], {r["label"]: i for i, r in enumerate(rows)}
    cov, cov_loo = [], []
    print(f"{'row':45s} {'measured':>10s} {'predicted':>10s} {'error':>8s} {'wall_s':>7s}  "
          f"{'interval (80 %)':>17s} in  {'leave-one-out':>17s} in")
    for label, ref, pred, unit, wall, j in res:
        if pred is None:
            print(f"{label:45s} {ref:10.2f} {'-':>10s} {'-':>8s}  {unit}")
            continue
        e = (pred - ref) / ref
        errs.append(abs(e))
        r = rows[by_label[label]]
        lo, hi = in_unit(r, r["interval_s"])
        ok = inside(r, r["interval_s"])
        cov.append(ok)
        line = f"{label:45s} {ref:10.2f} {pred:10.2f} {100 * e:+7.1f}% {wall:7.1f}  {lo:8.2f}-{hi:<8.2f} {'y' if ok else 'n':>2s}"
        l = loo[by_label[label]]
        if l is not None:
            llo, lhi = in_unit(r, l)
            ok = inside(r, l)
            cov_loo.append(ok)
            line += f"  {llo:8.2f}-{lhi:<8.2f} {'y' if ok else 'n':>2s}"
        print(line + f"  ({unit})")
    if errs:
        print(f"\n{len(errs)} rows: median |error| {100 * statistics.median(errs):.1f} %, "
              f"worst {100 * max(errs):.1f} %")
    if cov:
        print(f"interval coverage (intended {100 * fpi.COVERAGE:.0f} %): in-sample {sum(cov)}/{len(cov)} "
              f"({100 * sum(cov) / len(cov):.0f} %, the residual table compiled in)" +
              (f", leave-one-out {sum(cov_loo)}/{len(cov_loo)} ({100 * sum(cov_loo) / len(cov_loo):.0f} %)"
               if cov_loo else ""))
    if rows:
        print(f"\n{'row':45s} {'compute busy':>12s} {'share':>6s} {'k':>6s}   (k: the factor on the compute "
              f"that would give the measurement, docs/accuracy.md sections 10, 16)")
        for r in rows:
            busy, share, k = compute_factor(r)
            print(f"{r['label']:45s} {busy:11.3f}s {100 * share:5.0f}% {k:6.3f}")


# The busy-time components of a row's slowest rank that are compute (the rest is communication).
COMPUTE_COMPONENTS = ("gemm", "attention", "vector", "optimizer", "host")


def compute_factor(r):
    """(compute busy s, its share of the predicted iteration, k) of a saved row: k is the factor by which
    the compute busy time would have to grow, the rest unchanged, for the predicted iteration to equal the
    measured one, k = 1 + (measured - predicted) / compute busy. A diagnostic, never applied to anything."""
    busy = sum(r["busy_s"].get(c, 0.0) for c in COMPUTE_COMPONENTS)
    if busy <= 0:
        return 0.0, 0.0, float("nan")
    return busy, busy / r["predicted_s"], 1 + (r["measured_s"] - r["predicted_s"]) / busy


if __name__ == "__main__":
    sys.exit(main())
