// The resolver's strategy part: the degrees against the cluster and the model, the pipeline
// schedule, the batch split and the sequence-parallel modes. dp 0 -> cluster.gpus / (tp*pp*sp).
#include <utility>

#include "shared/error.h"
#include "shared/integer_root.h"
#include "shared/scenario_resolver.h"
#include "shared/offload_rules.h"
#include "shared/sequence_rules.h"

namespace tandem {

StrategySpec Resolver::strategy(const ModelSpec& model, const ClusterSpec& cluster) const {
  const proto::Strategy& p = s_.strategy();
  StrategySpec spec;
  spec.tp_mode = choice("strategy.tp_mode", p.tp_mode(), kTpModeSpellings);
  spec.pp_schedule = choice("strategy.pp_schedule", p.pp_schedule(), kPpScheduleSpellings);
  spec.sp_mode = choice("strategy.sp_mode", p.sp_mode(), kSpModeSpellings);
  spec.recompute = choice("strategy.recompute", p.recompute(), kRecomputeSpellings);
  spec.offload = choice("strategy.offload", p.offload(), kOffloadSpellings);
  spec.dtype = choice("strategy.dtype", p.dtype(), kDTypeSpellings, kStrategyDTypeCount);
  if (spec.dtype == DType::kFp8 && !(cluster.peak_fp8_tflops > 0)) {
    fail("strategy.dtype", "fp8 needs FP8 tensor cores (Hopper or later), and cluster '" +
                               (cluster.preset.empty() ? cluster.gpu_name : cluster.preset) + "' (" + cluster.gpu_name +
                               ") has none: cluster.peak_fp8_tflops is 0 (an A100 has no FP8); use bf16 or fp16, "
                               "or an H100/H200 cluster (dgx-h100, hgx-h200)");
  }
  spec.collective_algorithm = choice("strategy.collective_algorithm", p.collective_algorithm(), kCollectiveAlgorithmSpellings);

  at_least("strategy.tp", p.tp(), 1);
  at_least("strategy.pp", p.pp(), 1);
  at_least("strategy.sp", p.sp(), 1);
  at_least("strategy.dp", p.dp(), 0);
  at_least("strategy.tp_depth", p.tp_depth(), 1);
  at_least("strategy.virtual_stages", p.virtual_stages(), 1);
  at_least("strategy.micro_batch", p.micro_batch(), 1);
  at_least("strategy.global_batch", p.global_batch(), 1);
  for (const auto& [path, value] : {std::pair<const char*, int>{"strategy.tp", p.tp()}, {"strategy.pp", p.pp()},
                                    {"strategy.sp", p.sp()}, {"strategy.dp", p.dp()}, {"strategy.tp_depth", p.tp_depth()}})
    at_most(path, value, kMaxGpus);
  at_most("strategy.virtual_stages", p.virtual_stages(), kMaxLayers);
  at_most("strategy.micro_batch", p.micro_batch(), kMaxMicroBatch);
  if (p.zero_stage() < 0 || p.zero_stage() > 3) {
    fail("strategy.zero_stage", "must be 0, 1, 2 or 3, got " + num(p.zero_stage()));
  }
  finite_at_most("strategy.bucket_mb", p.bucket_mb(), kMaxBucketMb, "MiB (about a tebibyte)");
  if (!(p.bucket_mb() > 0)) fail("strategy.bucket_mb", "must be positive, got " + num(p.bucket_mb()));
  spec.tp = p.tp();
  spec.pp = p.pp();
  spec.sp = p.sp();
  spec.tp_depth = p.tp_depth();
  spec.virtual_stages = p.virtual_stages();
  spec.zero_stage = p.zero_stage();
  spec.micro_batch = p.micro_batch();
  spec.global_batch = p.global_batch();
  spec.bucket_mb = p.bucket_mb();
  spec.flash_attention = p.flash_attention();
  spec.offload_fraction = p.offload_fraction();
  spec.chunk_search_range_m = p.chunk_search_range_m();
  spec.chunk_min_m = p.chunk_min_m();
  spec.gpu_margin_mem_ratio = p.gpu_margin_mem_ratio();

  // Data parallelism: the rest of the GPUs.
  const int64_t model_parallel = int64_t{spec.tp} * spec.pp * spec.sp;
  const std::string mp_text = "tp*pp*sp = " + num(spec.tp) + "*" + num(spec.pp) + "*" + num(spec.sp);
  std::string dp_text;
  if (p.dp() == 0) {
    if (cluster.gpus % model_parallel != 0) {
      fail("cluster.gpus", "gpus = " + num(cluster.gpus) + " must be a multiple of " + mp_text + " = " +
                               num(model_parallel) + see("strategy.tp") +
                               " so that dp = gpus/(tp*pp*sp) is whole (dp*tp*pp*sp must equal gpus)");
    }
    spec.dp = static_cast<int>(cluster.gpus / model_parallel);
    dp_text = "dp = " + num(spec.dp) + " (derived: cluster.gpus/(tp*pp*sp))";
  } else {
    spec.dp = p.dp();
    if (spec.dp * model_parallel != cluster.gpus) {
      fail("strategy.dp", "dp*tp*pp*sp = " + num(spec.dp) + "*" + num(spec.tp) + "*" + num(spec.pp) + "*" +
                              num(spec.sp) + " = " + num(spec.dp * model_parallel) +
                              " must equal cluster.gpus = " + num(cluster.gpus) + see("cluster.gpus"));
    }
    dp_text = "dp = " + num(spec.dp);
  }

  // Tensor parallelism: the grid, then the model dimensions it splits.
  const int64_t tp = spec.tp;
  if (spec.tp_depth != 1 && spec.tp_mode != TpMode::k2p5d) {
    fail("strategy.tp_depth", "tp_depth = " + num(spec.tp_depth) + " is only used by tp_mode 2.5d, not " +
                                  to_string(spec.tp_mode));
  }
  int64_t side = tp;  // how many ways each split dimension is cut
  const std::string tp_at = "strategy.tp";
  switch (spec.tp_mode) {
    case TpMode::k1d: break;
    case TpMode::k2d:
      side = isqrt(tp);
      if (side * side != tp) {
        fail(tp_at, "tp_mode 2d needs a q*q grid: tp = " + num(tp) + " is not a perfect square (try 1, 4, 9, 16, 64)");
      }
      break;
    case TpMode::k2p5d: {
      const int64_t d = spec.tp_depth;
      side = tp % d == 0 ? isqrt(tp / d) : 0;
      if (tp % d != 0 || side * side * d != tp) {
        fail(tp_at, "tp_mode 2.5d needs tp = tp_depth*q*q: tp = " + num(tp) + " with tp_depth = " + num(d) +
                        see("strategy.tp_depth") + " is not d times a perfect square");
      }
      break;
    }
    case TpMode::k3d:
      side = icbrt(tp);
      if (side * side * side != tp) {
        fail(tp_at, "tp_mode 3d needs a q*q*q grid: tp = " + num(tp) + " is not a perfect cube (try 1, 8, 27, 64)");
      }
      break;
  }
  const std::string by = spec.tp_mode == TpMode::k1d ? "tp" : std::string("the ") + to_string(spec.tp_mode) + " grid side";
  const std::string whole = " (each tensor-parallel rank must get whole heads)";
  split(tp_at, by, side, "model.heads", model.heads, whole);
  split(tp_at, by, side, "model.kv_heads", model.kv_heads, whole);
  if (spec.tp_mode != TpMode::k1d) split(tp_at, by, side, "model.hidden", model.hidden, "");
  split(tp_at, by, side, "model.ffn_hidden", model.ffn_hidden, "");
  split(tp_at, by, side, "model.vocab", model.vocab,
        " (Megatron pads the vocabulary to a multiple of 128*tp; give the padded size, e.g. " +
            num((model.vocab + 128 * side - 1) / (128 * side) * 128 * side) + ")");

  // Pipeline.
  const int64_t chunks = int64_t{spec.pp} * spec.virtual_stages;
  if (model.layers % chunks != 0) {
    fail("strategy.pp", "pp*virtual_stages = " + num(spec.pp) + "*" + num(spec.virtual_stages) + " = " + num(chunks) +
                            " must divide model.layers = " + num(model.layers) + see("model.layers") +
                            " (every stage holds the same number of layers)");
  }
  if (spec.virtual_stages > 1 && spec.pp_schedule != PpSchedule::kInterleaved) {
    fail("strategy.virtual_stages", "virtual_stages = " + num(spec.virtual_stages) +
                                        " needs pp_schedule interleaved, not " + to_string(spec.pp_schedule) +
                                        see("strategy.pp_schedule"));
  }

  // Batch.
  const int64_t per_step = int64_t{spec.dp} * spec.micro_batch;
  if (spec.global_batch % per_step != 0) {
    fail("strategy.global_batch", "global_batch = " + num(spec.global_batch) + " must be a multiple of dp*micro_batch = " +
                                      num(spec.dp) + "*" + num(spec.micro_batch) + " = " + num(per_step) + " (" +
                                      dp_text + ")");
  }
  if (spec.pp_schedule == PpSchedule::kInterleaved) {
    if (spec.pp < 2) {
      fail("strategy.pp_schedule", "interleaved runs several model chunks on each pipeline stage and needs pp >= 2, "
                                   "got pp = " + num(spec.pp) + see("strategy.pp") +
                                   " (with one stage use gpipe or 1f1b and virtual_stages 1)");
    }
    if (spec.virtual_stages < 2) {
      fail("strategy.pp_schedule", "interleaved needs virtual_stages >= 2 (model chunks per stage), got " +
                                       num(spec.virtual_stages) + see("strategy.virtual_stages"));
    }
    if (spec.micro_batches() % spec.pp != 0) {
      fail("strategy.pp_schedule", "interleaved needs micro-batches per iteration, global_batch/(dp*micro_batch) = " +
                                       num(spec.global_batch) + "/" + num(per_step) + " = " + num(spec.micro_batches()) +
                                       ", to be a multiple of pp = " + num(spec.pp));
    }
  }

  // Sequence parallelism.
  const bool sp_axis =
      spec.sp_mode == SpMode::kRing || spec.sp_mode == SpMode::kUlysses || spec.sp_mode == SpMode::kRingAttention;
  if (spec.sp > 1 && !sp_axis) {
    fail("strategy.sp", "sp = " + num(spec.sp) + " needs sp_mode ring, ulysses or ring_attention, not " + to_string(spec.sp_mode) +
                            see("strategy.sp_mode") +
                            (spec.sp_mode == SpMode::kMegatron ? " (megatron sequence parallelism runs over the tp group)" : ""));
  }
  if (sp_axis && spec.sp < 2) {
    fail("strategy.sp_mode", std::string("sp_mode ") + to_string(spec.sp_mode) + " needs sp > 1, got sp = " +
                                 num(spec.sp) + see("strategy.sp"));
  }
  if (model.seq_len % spec.sp != 0) {
    fail("strategy.sp", "sp = " + num(spec.sp) + " must divide model.seq_len = " + num(model.seq_len) + see("model.seq_len"));
  }
  if (spec.sp_mode == SpMode::kUlysses && model.heads % (tp * spec.sp) != 0) {
    fail("strategy.sp", "ulysses needs tp*sp = " + num(tp) + "*" + num(spec.sp) + " = " + num(tp * spec.sp) +
                            " to divide model.heads = " + num(model.heads) + see("model.heads") +
                            " (its all-to-all scatters heads)");
  }
  check_sequence_rules(
      spec, model, [this](const std::string& f, const std::string& r) { fail(f, r); },
      [this](const std::string& f) { return see(f); });
  if (spec.sp_mode == SpMode::kMegatron) {
    if (spec.tp_mode != TpMode::k1d) {
      fail("strategy.sp_mode", std::string("megatron sequence parallelism works with tp_mode 1d only, not ") +
                                   to_string(spec.tp_mode));
    }
    if (model.seq_len % tp != 0) {
      fail("strategy.sp_mode", "megatron sequence parallelism needs tp = " + num(tp) + " to divide model.seq_len = " +
                                   num(model.seq_len) + see("model.seq_len"));
    }
  }

  // Multi-dimensional tensor parallelism, after the sequence-parallel rules (those name the mode
  // conflict first).
  const bool summa = spec.tp_mode == TpMode::k2d || spec.tp_mode == TpMode::k2p5d;
  if (spec.tp_mode == TpMode::k2p5d && side < 2) {
    fail(tp_at, "tp_mode 2.5d needs a grid side q >= 2 (tp = tp_depth*q*q = " + num(tp) +
                    "): with q = 1 the depth layers only split the batch (use dp)" + see("strategy.tp_depth"));
  }
  if (summa && side > 1) {
    // 2D / 2.5D (shared/tp2d_groups.h): the grid rows (of every depth layer) split each
    // micro-batch, the columns the features.
    const std::string mode = to_string(spec.tp_mode);
    const int64_t rows = spec.tp_mode == TpMode::k2p5d ? side * spec.tp_depth : side;
    const std::string rows_text = spec.tp_mode == TpMode::k2p5d ? "tp_depth*q = " + num(spec.tp_depth) + "*" + num(side)
                                                                : "q = " + num(side);
    if (spec.micro_batch % rows != 0) {
      fail("strategy.micro_batch", "tp_mode " + mode + " splits each micro-batch over the " + rows_text +
                                       " grid rows: micro_batch = " + num(spec.micro_batch) + " must be a multiple of " +
                                       num(rows) + see("strategy.tp"));
    }
    if (model.norm != Norm::kLayerNorm) {
      fail("model.norm", "tp_mode " + mode + " is generated with layernorm only (its split row statistics), not rmsnorm" +
                             see("strategy.tp_mode"));
    }
    if (spec.sp_mode == SpMode::kRing || spec.sp_mode == SpMode::kUlysses) {
      fail("strategy.sp_mode", "tp_mode " + mode + " is not generated with sp_mode " + to_string(spec.sp_mode) +
                                   see("strategy.tp_mode"));
    }
  }
  if (spec.tp_mode == TpMode::k3d && side > 1) {
    // 3D (shared/tp3d_groups.h): each micro-batch is split over q*q batch blocks, and the weights'
    // output rows and the vocabulary over q*q blocks (q of them gathered, shared/tp3d.h).
    const int64_t q2 = side * side;
    const std::string cube = " (tp_mode 3d splits it into q*q = " + num(q2) + " blocks, q = " + num(side) + ")";
    if (spec.micro_batch % q2 != 0) {
      fail("strategy.micro_batch", "micro_batch = " + num(spec.micro_batch) + " must be a multiple of q*q = " +
                                       num(q2) + cube + see("strategy.tp"));
    }
    auto blocks = [&](const char* field, int64_t value, const std::string& what) {
      if (value % q2 != 0) {
        fail(field, what + " = " + num(value) + " must be a multiple of q*q = " + num(q2) + cube + see("strategy.tp"));
      }
    };
    blocks("model.hidden", model.hidden, "hidden");
    blocks("model.ffn_hidden", model.ffn_hidden, "ffn_hidden");
    blocks("model.vocab", model.vocab, "vocab");
    blocks("model.kv_heads", model.kv_heads * (model.hidden / model.heads), "kv_heads*head_dim");
    if (model.norm != Norm::kLayerNorm) {
      fail("model.norm", "tp_mode 3d is generated with layernorm only (its split row statistics), not rmsnorm" +
                             see("strategy.tp_mode"));
    }
    if (spec.sp_mode == SpMode::kRing || spec.sp_mode == SpMode::kUlysses || spec.sp_mode == SpMode::kRingAttention) {
      fail("strategy.sp_mode", std::string("tp_mode 3d is not generated with sp_mode ") + to_string(spec.sp_mode) +
                                   see("strategy.tp_mode"));
    }
  }
  check_offload_rules(
      spec, [this](const std::string& f, const std::string& r) { fail(f, r); },
      [this](const std::string& f) { return see(f); });
  return spec;
}

}  // namespace tandem
