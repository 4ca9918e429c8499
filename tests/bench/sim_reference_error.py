#!/usr/bin/env python3
"""Prediction error of `tandem sim` on the public reference data (traces/reference/, copied from
../shared/reference/ with their source lines). No per-row tuning: every row runs with the same
model settings; the table and the median / worst errors go to stdout (recorded in docs/sim.md).

  tests/bench/sim_reference_error.py [--bin build/bin/tandem-sim] [--only korthikanti|megatron|nemo]
"""
import argparse, json, os, statistics, subprocess, sys, time

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
                  f"strategy.pp_schedule={'interleaved' if v > 1 else '1f1b'}"]
        for mode, col, extra in (("full", "iter_time_full_s", ["strategy.recompute=full"]),
                                 ("seqsel", "iter_time_seqsel_s",
                                  ["strategy.recompute=selective", "strategy.sp_mode=megatron"])):
            label = f"korthikanti {r['name']} {mode}"
            try:
                j, wall = run(binary, common + extra, timeout)
                out.append((label, float(r[col]), j["iteration_time_s"], "s", wall))
            except Exception as e:  # report and go on: one failing row must not hide the others
                out.append((label, float(r[col]), None, str(e)[:200], 0))
    return out


def megatron(binary, timeout, max_gpus):
    out = []
    for r in rows("megatron_core_h100_weak_scaling.tsv"):
        if int(r["gpus"]) > max_gpus:
            out.append((f"megatron-core {r['name']}", float(r["tflops_per_gpu"]), None,
                        f"skipped: {r['gpus']} GPUs > --max-gpus", 0))
            continue
        sets = [f"model.name={r['name']}", f"model.layers={r['layers']}", f"model.hidden={r['hidden']}",
                f"model.heads={r['heads']}", "model.ffn_hidden=0", "model.vocab=131072", "model.seq_len=4096",
                "model.dropout=0", "cluster.preset=dgx-h100", f"cluster.gpus={r['gpus']}",
                f"strategy.tp={r['tp']}", f"strategy.pp={r['pp']}", f"strategy.dp={r['dp']}",
                f"strategy.global_batch={r['global_batch']}", "strategy.micro_batch=1", "strategy.dtype=bf16",
                "strategy.recompute=none", "strategy.flash_attention=true", "strategy.zero_stage=1",
                f"strategy.sp_mode={'megatron' if int(r['tp']) > 1 else 'none'}",
                # The source says "DP/TP/PP overlap on": Megatron-Core --tp-comm-overlap.
                f"strategy.tp_comm_overlap={'true' if int(r['tp']) > 1 else 'false'}",
                "strategy.overlap_param_gather=true",
                # Megatron-Core's DDP bucket: max(40M, 1M * dp) parameters (distributed_data_parallel.py).
                f"strategy.bucket_mb={max(40e6, 1e6 * int(r['dp'])) * 2 / 2**20:.1f}"]
        label = f"megatron-core {r['name']} (TFLOP/s/GPU)"
        try:
            j, wall = run(binary, sets, timeout)
            out.append((label, float(r["tflops_per_gpu"]), j["model_tflops_per_gpu"], "TFLOP/s", wall))
        except Exception as e:
            out.append((label, float(r["tflops_per_gpu"]), None, str(e)[:200], 0))
    return out


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
}


def nemo(binary, timeout, max_gpus):
    out = []
    for r in rows("nemo_24.07_h100_fp8.tsv"):
        label = f"nemo {r['model']} {r['gpus']} GPUs (TFLOP/s/GPU)"
        ref = float(r["model_tflops_per_gpu"])
        if int(r["cp"]) > 1:
            out.append((label, ref, None, f"skipped: cp={r['cp']} needs context parallelism, not in tandem yet", 0))
            continue
        if int(r["gpus"]) > max_gpus:
            out.append((label, ref, None, f"skipped: {r['gpus']} GPUs > --max-gpus", 0))
            continue
        layers, hidden, heads, kv, ffn, vocab, act, norm, tied, dropout = NEMO_MODELS[r["model"]]
        tp, pp, vp = int(r["tp"]), int(r["pp"]), int(r["vp"])
        pad = 128 * tp
        sets = [f"model.name={r['model']}", f"model.layers={layers}", f"model.hidden={hidden}",
                f"model.heads={heads}", f"model.kv_heads={kv}", f"model.ffn_hidden={ffn}",
                f"model.vocab={(vocab + pad - 1) // pad * pad}", f"model.seq_len={r['seq']}",
                f"model.activation={act}", f"model.norm={norm}", f"model.tied_embeddings={'true' if tied else 'false'}",
                f"model.dropout={dropout}", "cluster.preset=dgx-h100", f"cluster.gpus={r['gpus']}",
                f"strategy.tp={tp}", f"strategy.pp={pp}", "strategy.dp=0",
                f"strategy.global_batch={r['global_batch']}", f"strategy.micro_batch={r['micro_batch']}",
                "strategy.dtype=fp8", "strategy.recompute=none", "strategy.flash_attention=true",
                "strategy.zero_stage=1", f"strategy.virtual_stages={vp}",
                f"strategy.pp_schedule={'interleaved' if vp > 1 else '1f1b'}",
                f"strategy.sp_mode={'megatron' if tp > 1 else 'none'}",
                f"strategy.tp_comm_overlap={'true' if tp > 1 else 'false'}", "strategy.overlap_param_gather=true"]
        try:
            j, wall = run(binary, sets, timeout)
            if j.get("oom"):  # no iteration time: not a prediction error, say so
                out.append((label, ref, None, f"out of memory in the simulation ({wall:.0f} s)", 0))
            else:
                out.append((label, ref, j["model_tflops_per_gpu"], "TFLOP/s", wall))
        except Exception as e:
            out.append((label, ref, None, str(e)[:200], 0))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "tandem-sim"))
    ap.add_argument("--only", choices=["korthikanti", "megatron", "nemo"])
    ap.add_argument("--max-gpus", type=int, default=1024)
    ap.add_argument("--timeout", type=int, default=1800)
    a = ap.parse_args()
    res = []
    if a.only in (None, "korthikanti"):
        res += korthikanti(a.bin, a.timeout)
    if a.only in (None, "megatron"):
        res += megatron(a.bin, a.timeout, a.max_gpus)
    if a.only in (None, "nemo"):
        res += nemo(a.bin, a.timeout, a.max_gpus)
    errs = []
    print(f"{'row':45s} {'measured':>10s} {'predicted':>10s} {'error':>8s} {'wall_s':>7s}")
    for label, ref, pred, unit, wall in res:
        if pred is None:
            print(f"{label:45s} {ref:10.2f} {'-':>10s} {'-':>8s}  {unit}")
            continue
        e = (pred - ref) / ref
        errs.append(abs(e))
        print(f"{label:45s} {ref:10.2f} {pred:10.2f} {100 * e:+7.1f}% {wall:7.1f}  ({unit})")
    if errs:
        print(f"\n{len(errs)} rows: median |error| {100 * statistics.median(errs):.1f} %, "
              f"worst {100 * max(errs):.1f} %")


if __name__ == "__main__":
    sys.exit(main())
